/**
 * One error hierarchy for sluice. Every error that crosses a module boundary is a SluiceError with
 * a stable `code` (for logs, metrics and the state item) and a `retriable` flag: retriable errors
 * end the run and the next scheduled run tries again; fatal ones need an operator.
 */
export class SluiceError extends Error {
  override readonly name: string = 'SluiceError';
  readonly code: string;
  readonly retriable: boolean;

  constructor(code: string, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** Configuration is missing or malformed; the message names the variable and what it accepts. */
export class ConfigError extends SluiceError {
  override readonly name = 'ConfigError';
  constructor(message: string) {
    super('CONFIG_INVALID', message);
  }
}

/** The source database is not set up for CDC (binlog off, wrong format, missing grants). */
export class PreflightError extends SluiceError {
  override readonly name = 'PreflightError';
  constructor(check: string, message: string) {
    super(`PREFLIGHT_${check}`, message);
  }
}

/** The stored binlog position no longer exists on the server (purged, or never valid). */
export class PositionLostError extends SluiceError {
  override readonly name = 'PositionLostError';
  constructor(message: string, cause?: unknown) {
    super('POSITION_LOST', message, { cause });
  }
}

/** Another run holds the lease, or ours expired: this run must not write state. */
export class LeaseLostError extends SluiceError {
  override readonly name = 'LeaseLostError';
  constructor(message: string) {
    super('LEASE_LOST', message, { retriable: true });
  }
}

/** The state item changed under us (a concurrent commit): our batch must not be committed. */
export class OffsetConflictError extends SluiceError {
  override readonly name = 'OffsetConflictError';
  constructor(message: string) {
    super('OFFSET_CONFLICT', message, { retriable: true });
  }
}

/** The local stack could not start; the message says what to install or free. */
export class LocalStackError extends SluiceError {
  override readonly name = 'LocalStackError';
  constructor(message: string, cause?: unknown) {
    super('LOCAL_STACK', message, { cause });
  }
}

/** A broken invariant: a bug in sluice, never a user error. */
export class AssertionError extends SluiceError {
  override readonly name = 'AssertionError';
  constructor(message: string) {
    super('ASSERTION', message);
  }
}
