/**
 * A reference for `npm run bench:snapshot`: a bare mysql2 process reading a whole table with the
 * binary protocol (a prepared `SELECT *`, rows streamed), with the options of sluice's paging
 * connection, counting rows and nothing else — no encoding, nothing written — start to exit. Plain
 * JavaScript, so its start-up is Node's and mysql2's alone. mysql2 is the client library sluice
 * must use, so this is how fast that library alone reads what `mariadb --quick` reads.
 *
 *   node bench/bare-mysql2.js <mysql-url> <schema.table>
 *
 * Prints the number of rows read.
 */
import mysql from 'mysql2';

const [url, table] = process.argv.slice(2);
const connection = mysql.createConnection({
  uri: url,
  jsonStrings: true,
  dateStrings: true,
  timezone: 'Z',
  supportBigNumbers: true,
  bigNumberStrings: true,
});
let rows = 0;
const fail = (error) => {
  console.error(error);
  process.exit(1);
};
connection.on('error', fail);
connection
  .execute(`SELECT * FROM ${table}`)
  .on('result', () => {
    rows++;
  })
  .on('error', fail)
  .on('end', () => {
    console.log(rows);
    connection.end();
  });
