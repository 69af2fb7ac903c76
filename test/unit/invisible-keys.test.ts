import { describe, expect, it } from 'vitest';
import { dialectFor, parseServerFlavor } from '../../lib/source/mysql/dialect/dialect.ts';
import type { SqlConnection } from '../../lib/source/mysql/server.ts';

describe("the dialect's session setup (prepareSession)", () => {
  it("shows MySQL 8.0.30+'s generated invisible primary key to the session's information_schema, and asks nothing of other servers", async () => {
    const sent = async (version: string, comment: string) => {
      const queries: string[] = [];
      const query = async (sql: string) => {
        queries.push(sql);
        return [[], []];
      };
      const conn = { query, end: async () => {} } as unknown as SqlConnection;
      await dialectFor(parseServerFlavor(version, comment)).prepareSession(conn);
      return queries;
    };
    expect(await sent('8.0.30', 'MySQL Community Server - GPL')).toEqual(['SET SESSION show_gipk_in_create_table_and_information_schema = ON']);
    expect(await sent('9.6.0', '')).toHaveLength(1);
    expect(await sent('8.0.29', 'MySQL Community Server - GPL')).toEqual([]);
    expect(await sent('10.11.19-MariaDB-0+deb12u1', 'Debian 12')).toEqual([]);
  });
});
