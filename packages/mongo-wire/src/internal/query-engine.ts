import { type Document } from 'bson';
import { Aggregator, Query, update as mingoUpdate } from 'mingo';
import * as pipelineOperators from 'mingo/operators/pipeline';
import { type Options } from 'mingo/types';
import { cloneDeep } from './bson-values.js';
import { CommandError } from './command-error.js';

/**
 * The mingo side of the server: filters, update operators, projections and aggregation.
 * Everything is imported from mingo's default entry point, which registers all of mingo's
 * query, projection, expression, accumulator, pipeline and window operators in its context
 * (mingo 7 otherwise needs explicit `Context` registration), so `$toLong`, `$mod`, `$cond`...
 * are available in update pipelines and aggregations alike.
 */

/** Per-command evaluation settings. */
export interface EvalOptions {
  /** The single `$$NOW` of the command (MongoDB binds one value per command). */
  readonly now: Date;
  /** `let` variables of the command, visible as `$$name`. */
  readonly variables?: Document;
  /** Resolves a collection of the command's database for `$lookup`/`$unionWith`. */
  readonly resolveCollection?: (name: string) => Document[];
}

/** Update operators MongoDB supports; all but `$setOnInsert` are applied by mingo. */
const UPDATE_OPERATORS = new Set([
  '$addToSet',
  '$bit',
  '$currentDate',
  '$inc',
  '$max',
  '$min',
  '$mul',
  '$pop',
  '$pull',
  '$pullAll',
  '$push',
  '$rename',
  '$set',
  '$setOnInsert',
  '$unset',
]);

/** Stages MongoDB allows in a pipeline-style update. */
const UPDATE_PIPELINE_STAGES = new Set(['$addFields', '$set', '$project', '$unset', '$replaceRoot', '$replaceWith']);

/** Stages that write to other collections would bypass this server's indexes; refused. */
const REFUSED_STAGES = new Set(['$out', '$merge']);

function mingoOptions(eval_: EvalOptions | undefined): Partial<Options> {
  return {
    ...(eval_?.variables ? { variables: eval_.variables } : {}),
    ...(eval_?.resolveCollection ? { collectionResolver: eval_.resolveCollection } : {}),
  };
}

/** Runs `fn`, reporting mingo's own errors (bad operators, bad arguments) as BadValue. */
export function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CommandError) throw err;
    throw new CommandError('BadValue', err instanceof Error ? err.message : String(err));
  }
}

/**
 * Replaces the string `$$NOW` in aggregation expressions by a literal of the command's time,
 * so every document and stage of one command sees the same instant (mingo would otherwise
 * read the clock per evaluation). Query-language parts of `$match` are left alone: there
 * `"$$NOW"` is a plain string; only `$expr` is an expression.
 */
export function bindNow(value: unknown, now: Date, inExpression: boolean): unknown {
  if (typeof value === 'string') return inExpression && value === '$$NOW' ? { $literal: now } : value;
  if (Array.isArray(value)) return value.map((v) => bindNow(v, now, inExpression));
  if (value === null || typeof value !== 'object' || value.constructor !== Object) return value;
  const out: Document = {};
  for (const [key, v] of Object.entries(value as Document)) {
    if (key === '$literal') out[key] = v;
    else if (key === '$expr') out[key] = bindNow(v, now, true);
    else if (key === '$match' && inExpression) out[key] = bindNow(v, now, false);
    else out[key] = bindNow(v, now, inExpression);
  }
  return out;
}

/** A compiled filter. */
export function compileFilter(filter: Document | undefined, eval_?: EvalOptions): (doc: Document) => boolean {
  const spec = filter ?? {};
  if (Object.keys(spec).length === 0) return () => true;
  const bound = eval_ ? (bindNow(spec, eval_.now, false) as Document) : spec;
  const query = guarded(() => new Query(bound, mingoOptions(eval_)));
  return (doc) => guarded(() => query.test(doc));
}

/** Validates a pipeline's stage names against what this server can run. */
export function checkPipeline(pipeline: unknown, forUpdate: boolean): Document[] {
  if (!Array.isArray(pipeline)) throw new CommandError('TypeMismatch', "'pipeline' must be an array");
  for (const stage of pipeline as unknown[]) {
    if (stage === null || typeof stage !== 'object' || Object.keys(stage).length !== 1) {
      throw new CommandError('FailedToParse', 'A pipeline stage specification object must contain exactly one field.');
    }
    const name = Object.keys(stage)[0] as string;
    if (forUpdate && !UPDATE_PIPELINE_STAGES.has(name)) {
      throw new CommandError('InvalidOptions', `${name} is not allowed to be used within an update`);
    }
    if (REFUSED_STAGES.has(name) || !(name in pipelineOperators)) {
      throw new CommandError('UnknownPipelineStage', `Unrecognized pipeline stage name: '${name}'`);
    }
  }
  return pipeline as Document[];
}

/** Runs an aggregation pipeline over `docs` (which it never mutates). */
export function runPipeline(docs: Document[], pipeline: Document[], eval_: EvalOptions): Document[] {
  const bound = bindNow(pipeline, eval_.now, true) as Document[];
  return guarded(() => new Aggregator(bound, mingoOptions(eval_)).run(docs.map((d) => cloneDeep(d))) as Document[]);
}

/** Applies a find-style projection. */
export function project(docs: Document[], projection: Document | undefined, eval_: EvalOptions): Document[] {
  if (!projection || Object.keys(projection).length === 0) return docs;
  const bound = bindNow(projection, eval_.now, true) as Document;
  const out = guarded(() => new Query({}, mingoOptions(eval_)).find(docs, bound).all() as Document[]);
  // mingo appends _id after included fields; MongoDB keeps document order, where _id is first.
  return out.map((d) => ('_id' in d ? { _id: d._id, ...d } : d));
}

/** True when `update` is an update-operator document (`{$set: ...}`) rather than a replacement. */
export function isOperatorUpdate(update: Document): boolean {
  const keys = Object.keys(update);
  const operators = keys.filter((k) => k.startsWith('$'));
  if (operators.length > 0 && operators.length !== keys.length) {
    throw new CommandError(
      'FailedToParse',
      `Unknown modifier: ${keys.find((k) => !k.startsWith('$'))}. Expected a valid update modifier or pipeline-style update specified as an array`,
    );
  }
  for (const op of operators) {
    if (!UPDATE_OPERATORS.has(op)) {
      throw new CommandError('FailedToParse', `Unknown modifier: ${op}. Expected a valid update modifier or pipeline-style update specified as an array`);
    }
  }
  return operators.length > 0;
}

/**
 * Applies update operators to a copy of `doc`. `$setOnInsert` applies only when `inserting`.
 * Returns the new document.
 */
export function applyOperators(
  doc: Document,
  update: Document,
  options: { inserting: boolean; arrayFilters?: Document[]; condition?: Document; eval: EvalOptions },
): Document {
  const copy = cloneDeep(doc);
  const modifier: Document = {};
  for (const [op, args] of Object.entries(update)) {
    if (op === '$setOnInsert') {
      if (options.inserting) modifier.$set = { ...(modifier.$set as Document | undefined), ...(args as Document) };
    } else if (op === '$set') {
      modifier.$set = { ...(modifier.$set as Document | undefined), ...(args as Document) };
    } else {
      modifier[op] = args;
    }
  }
  if (Object.keys(modifier).length === 0) return copy;
  guarded(() =>
    mingoUpdate(copy, modifier, options.arrayFilters, options.condition, {
      cloneMode: 'deep',
      // mingo refuses any write to its idKey; MongoDB allows setting _id to its current value,
      // so the caller compares _id before and after instead (ImmutableField).
      queryOptions: { ...mingoOptions(options.eval), idKey: '\u0000mongo-wire-no-id' },
    }),
  );
  return copy;
}

/** Applies a pipeline-style update to a copy of `doc`. */
export function applyPipeline(doc: Document, pipeline: Document[], eval_: EvalOptions): Document {
  const [out] = runPipeline([doc], pipeline, eval_);
  if (!out) throw new CommandError('BadValue', 'update pipeline removed the document');
  return out;
}
