import type { Clock } from '@tickfleet/core';
import type { BudgetsRepo } from './budget-types.js';
import { openRedisBudgets, type ConnectorLookup } from './redis-budgets.js';

/** What a role opened its budgets from: the state store (its `budgets` and `connectors`). */
export interface BudgetsHome {
  budgets: BudgetsRepo;
  connectors: ConnectorLookup;
}

export interface OpenedBudgets {
  budgets: BudgetsRepo;
  /** `'store'` (the state store's budgets) or `'redis'` (`TICKFLEET_BUDGET_URL`). */
  kind: 'store' | 'redis';
  /** Ends what was opened here (the budget Redis connection); the store stays the caller's. */
  close(): Promise<void>;
}

/**
 * The budgets every role uses: the state store's when `budgetUrl` is unset (the default), else a
 * Redis budget at `budgetUrl` reading the venues' limits from the store's connectors.
 */
export async function openBudgets(budgetUrl: string | undefined, store: BudgetsHome, options: { prefix?: string; clock?: Clock } = {}): Promise<OpenedBudgets> {
  if (!budgetUrl) return { budgets: store.budgets, kind: 'store', close: async () => undefined };
  const budgets = await openRedisBudgets(budgetUrl, { connectors: store.connectors, ...options });
  return { budgets, kind: 'redis', close: () => budgets.close() };
}
