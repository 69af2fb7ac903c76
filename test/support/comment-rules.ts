import type { CommentRules } from '../../lib/source/mysql/ddl/lexer.ts';
import { dialectFor } from '../../lib/source/mysql/dialect/dialect.ts';

/** How a MariaDB server of `version` (10.11.19 → 101119) reads executable comments, as its dialect says. */
export const mariadbComments = (version: number): CommentRules => dialectFor({ kind: 'mariadb', version, text: '' }).comments;

/** How a MySQL server of `version` (8.0.46 → 80046) reads executable comments, as its dialect says. */
export const mysqlComments = (version: number): CommentRules => dialectFor({ kind: 'mysql', version, text: '' }).comments;
