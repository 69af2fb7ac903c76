import { describe, expect, it } from 'vitest';
import { type CliIo, run } from '../../lib/cli/main.ts';

/** An in-memory terminal for `run`. */
function terminal(env: CliIo['env']) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { env, stdout: { write: (text: string) => out.push(text) }, stderr: { write: (text: string) => err.push(text) } };
  return { io, stdout: () => out.join(''), stderr: () => err.join('') };
}

describe('sluice command, in-process', () => {
  it('prints help and exits 0', async () => {
    const t = terminal({});
    expect(await run(['--help'], t.io)).toBe(0);
    expect(t.stdout()).toMatch(/^Usage: sluice/);
    expect(t.stdout()).toMatch(/capture \[options\]\s+run the poller/);
  });

  it('a bad setting exits 1 naming every bad variable, from the environment it was given alone', async () => {
    const before = { ...process.env };
    const t = terminal({ SLUICE_SOURCE_ID: 'x', SLUICE_HOME: '/nonexistent' });
    expect(await run(['capture', '--once', '--startup', 'yesterday'], t.io)).toBe(1);
    expect(t.stderr()).toMatch(/^sluice: CONFIG_INVALID: invalid configuration:/);
    expect(t.stderr()).toMatch(/SLUICE_STARTUP: expected initial, initial-only, latest, earliest, .* got "yesterday"/);
    // process.env holds the test stack's settings; the command must not have read or changed them.
    expect(t.stderr()).toMatch(/SLUICE_STATE_TABLE: is required/);
    // Powertools marks the SDK's user agent in process.env once, when its module first loads (the
    // CLI loads it lazily, inside the command); that is the library's, not a setting of sluice's.
    const { AWS_SDK_UA_APP_ID: _marker, ...after } = process.env;
    expect(after).toEqual(before);
  });

  it('an unknown command or option exits 1 with the usage', async () => {
    const t = terminal({});
    expect(await run(['captur'], t.io)).toBe(1);
    expect(t.stderr()).toMatch(/unknown command 'captur'/);
    const u = terminal({});
    expect(await run(['capture', '--onse'], u.io)).toBe(1);
    expect(u.stderr()).toMatch(/unknown option '--onse'/);
  });

  it('`local env` without a running stack says how to start one', async () => {
    const t = terminal({ SLUICE_HOME: '/nonexistent' });
    expect(await run(['local', 'env'], t.io)).toBe(1);
    expect(t.stderr()).toBe('sluice: LOCAL_STACK: the local stack is not running here; start it with `sluice local up`\n');
  });
});
