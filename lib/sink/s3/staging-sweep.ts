import type { S3Client } from '@aws-sdk/client-s3';
import type { Log } from '../../log.ts';
import { deleteObjects } from './objects.ts';

/** How many staging keys one DeleteObjects request takes (S3's limit). */
const PER_REQUEST = 1000;

/**
 * Deletes the staging objects of committed commits in bulk instead of one request per commit. Once a
 * commit's copies are done its staging objects are never read again (lib/commit/protocol.ts), so
 * deleting them later changes nothing a reader or a roll-forward sees; what a crash leaves behind is
 * deleted by the next run's recovery, which removes everything under the source's staging root.
 * At one commit a second this saves one of the five S3 requests of a one-table commit.
 */
export class StagingSweep {
  private keys: string[] = [];

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly log: Log,
  ) {}

  /** Takes the staging keys of a commit whose copies are done; deletes a full request's worth. */
  async add(keys: readonly string[]): Promise<void> {
    this.keys.push(...keys);
    if (this.keys.length >= PER_REQUEST) await this.flush();
  }

  /**
   * Deletes what is collected (every 1,000 keys, and at the end of a run). Never fails: a commit
   * that is already durable must not fail over the clean-up of earlier ones, and what is left
   * (also after a hard timeout skips the end of the run) is deleted by the next run's recovery.
   */
  async flush(): Promise<void> {
    const keys = this.keys;
    this.keys = [];
    await deleteObjects(this.s3, this.bucket, keys).catch((error) =>
      this.log.warn('could not delete staging objects; the next run deletes them', { error: String(error) }),
    );
  }
}
