import { type Document } from 'bson';

/**
 * MongoDB's numeric error codes with their code names, as the server reports them
 * (src/mongo/base/error_codes.yml). Only the ones this server can raise.
 */
export const ErrorCodes = {
  InternalError: 1,
  BadValue: 2,
  FailedToParse: 9,
  TypeMismatch: 14,
  IllegalOperation: 20,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  ConflictingUpdateOperators: 40,
  CursorNotFound: 43,
  NamespaceExists: 48,
  CommandNotFound: 59,
  ImmutableField: 66,
  InvalidOptions: 72,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  InvalidNamespace: 73,
  InvalidLength: 16,
  Unauthorized: 13,
  DuplicateKey: 11000,
  /** IDL: "BSON field 'insert.foo' is an unknown field." */
  UnknownField: 40415,
  /** "Unrecognized pipeline stage name: '$foo'" */
  UnknownPipelineStage: 40324,
} as const;

export type ErrorCodeName = keyof typeof ErrorCodes;

/** Code names MongoDB reports for codes that have no symbolic name. */
const CODE_NAME_OVERRIDES: Partial<Record<ErrorCodeName, string>> = {
  UnknownField: 'Location40415',
  UnknownPipelineStage: 'Location40324',
};

/**
 * A command failure shaped like MongoDB's: `{ ok: 0, errmsg, code, codeName, ...extra }`.
 * Thrown anywhere inside a command handler; the dispatcher turns it into the reply.
 */
export class CommandError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly extra: Document;

  constructor(name: ErrorCodeName, message: string, extra: Document = {}) {
    super(message);
    this.name = 'CommandError';
    this.code = ErrorCodes[name];
    this.codeName = CODE_NAME_OVERRIDES[name] ?? name;
    this.extra = extra;
  }

  toReply(): Document {
    return { ok: 0, errmsg: this.message, code: this.code, codeName: this.codeName, ...this.extra };
  }

  /** The `writeErrors[]` entry shape of insert/update/delete replies. */
  toWriteError(index: number): Document {
    return { index, code: this.code, errmsg: this.message, ...this.extra };
  }
}
