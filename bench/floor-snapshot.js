/**
 * A floor for `npm run bench:snapshot`: the least any snapshot built on mysql2 that writes gzip JSON
 * lines must do, as one process, start to exit — so its time bounds from below what `sluice
 * snapshot` can reach on the machine. It reads the table with the binary protocol as sluice's
 * paging does, but hands each row packet to nothing that parses it (mysql2 frames it, no more);
 * per row it copies one of sluice's own lines of the table (from <lines-file>, in turn) into 1 MiB
 * buffers, and gzips them (level 1, as sluice does) on libuv's thread pool, four at a time,
 * throwing the output away. No values are encoded, no key tracked, nothing uploaded, no commit, no
 * state: sluice does all of that too.
 *
 *   node bench/floor-snapshot.js <mysql-url> <schema.table> <lines-file>
 *
 * Prints the number of rows read.
 */
import { readFileSync } from 'node:fs';
import { gzip } from 'node:zlib';
import mysql from 'mysql2';

const [url, table, linesFile] = process.argv.slice(2);
const text = readFileSync(linesFile);
const lines = [];
for (let start = 0; start < text.length; ) {
  const end = text.indexOf(0x0a, start) + 1 || text.length;
  lines.push(text.subarray(start, end));
  start = end;
}
let turn = 0;
const connection = mysql.createConnection({ uri: url });
const fail = (error) => {
  console.error(error);
  process.exit(1);
};
connection.on('error', fail);

const SIZE = 1 << 20;
let buffer = Buffer.allocUnsafe(SIZE);
let at = 0;
let rows = 0;
let compressing = 0;
let paused;
let ended = false;
const done = () => {
  if (ended && compressing === 0) {
    console.log(rows);
    connection.end();
  }
};
const compress = (full) => {
  compressing++;
  gzip(full, { level: 1 }, (error) => {
    if (error) fail(error);
    compressing--;
    if (paused && compressing < 4) {
      const resume = paused;
      paused = undefined;
      resume.resume();
    }
    done();
  });
};

const command = connection.execute(`SELECT * FROM ${table}`);
command.buildParserFromFields = (_fields, conn) =>
  class {
    next() {
      rows++;
      const line = lines[turn];
      turn = (turn + 1) % lines.length;
      if (at + line.length > SIZE) {
        compress(buffer.subarray(0, at));
        buffer = Buffer.allocUnsafe(SIZE);
        at = 0;
        if (compressing >= 4) {
          paused = conn;
          conn.pause();
        }
      }
      at += line.copy(buffer, at);
      return undefined;
    }
  };
command.on('error', fail).on('end', () => {
  compress(buffer.subarray(0, at));
  ended = true;
});
