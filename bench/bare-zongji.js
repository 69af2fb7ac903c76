/**
 * The reference for `npm run bench:capture`: a bare @vlasky/zongji process decoding a binlog range
 * with sluice's decoding options, counting rows and nothing else, start to exit. Plain JavaScript,
 * so its start-up is Node's and zongji's alone.
 *
 *   node bench/bare-zongji.js <mysql-url> <file> <pos> <end-file> <end-pos>
 *
 * Prints the number of rows decoded; exits once the transaction ending at or after the end is read.
 */
import ZongJi from '@vlasky/zongji';

const [url, file, pos, endFile, endPos] = process.argv.slice(2);
const zongji = new ZongJi({ uri: url, dateStrings: true, timezone: 'Z', supportBigNumbers: true, bigNumberStrings: true });
let rows = 0;
let current = file;
let done = false;
// Binlog names share one width (binlog.000042), so they compare as strings.
const reached = (pos) => current > endFile || (current === endFile && pos >= Number(endPos));

zongji.on('binlog', (ev) => {
  const type = ev.getTypeName();
  if (type === 'Rotate') current = ev.binlogName;
  else if (type === 'WriteRows' || type === 'UpdateRows' || type === 'DeleteRows') rows += ev.rows.length;
  else if ((type === 'Xid' || type === 'Query') && !done && reached(ev.nextPosition)) {
    done = true;
    zongji.stop();
    console.log(rows);
  }
});
zongji.on('error', (error) => {
  console.error(error);
  process.exit(1);
});
zongji.start({ serverId: 900_000 + (process.pid % 100_000), filename: file, position: Number(pos) });
