import type { Clock } from '@tickfleet/core';
import type { BudgetsRepo } from './budget-types.js';
import type { ConnectorLookup } from './cached-connectors.js';
import { openRedisBudgets } from './redis-budgets.js';

/** What a role opens its budgets from: the state store (its `budgets` and `connectors`). */
export interface BudgetsHome {
  budgets: BudgetsRepo;
  connectors: ConnectorLookup;
}

export interface OpenedBudgets<S extends BudgetsHome> {
  /** The store as the role uses it: the same store, whose `budgets` are the ones chosen. */
  store: S;
  /** `'store'` (the state store's own budgets, the default) or `'redis'` (`TICKFLEET_BUDGET_URL`). */
  kind: 'store' | 'redis';
  /** Ends what was opened here (the budget Redis connection); the store stays the caller's to close. */
  close(): Promise<void>;
}

/**
 * The budgets every role uses: the state store's when `budgetUrl` is unset (the default), else a
 * Redis budget at `budgetUrl` that reads the venues' limits from the store's connectors. The role
 * goes on passing one store around; only its `budgets` differ, so the budget gate, the worker's
 * heartbeat line, `tickfleet status` and the dashboard all read the budget that is in use.
 */
export async function openBudgets<S extends BudgetsHome>(
  budgetUrl: string | undefined,
  store: S,
  options: { prefix?: string; clock?: Clock } = {},
): Promise<OpenedBudgets<S>> {
  if (!budgetUrl) return { store, kind: 'store', close: async () => undefined };
  const budgets = await openRedisBudgets(budgetUrl, { connectors: store.connectors, ...options });
  return { store: withBudgets(store, budgets), kind: 'redis', close: () => budgets.close() };
}

/**
 * `store` with `budgets` in place of its own. Every other member is the store's, with methods
 * bound to the store itself (its private state stays reachable), so `close`, `ping` and the other
 * repositories behave exactly as before.
 */
function withBudgets<S extends BudgetsHome>(store: S, budgets: BudgetsRepo): S {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'budgets') return budgets;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
