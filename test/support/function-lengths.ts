import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/**
 * Measures every function of lib/ and functions/ (declarations, methods, constructors, accessors,
 * arrows and function expressions) in lines, from its first token to its last: a nested function
 * counts in its own length and in each enclosing one's. A table — a function whose body is one
 * object or array literal — is measured but marked, as its length is data, not logic.
 */

/** One measured function: `name` is unique within its file (the enclosing names, `/`-joined). */
export interface FunctionLength {
  readonly file: string;
  readonly name: string;
  readonly line: number;
  readonly lines: number;
  readonly table: boolean;
}

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

type FunctionNode = ts.FunctionLikeDeclaration;

function isFunction(node: ts.Node): node is FunctionNode {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node)
  );
}

/** `x`, `(x)`, `x as T`, `x satisfies T` and `<T>x` read as `x`. */
function unwrap(expression: ts.Expression): ts.Expression {
  let e = expression;
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isTypeAssertionExpression(e)) e = e.expression;
  return e;
}

const isLiteral = (e: ts.Expression | undefined) => e !== undefined && (ts.isObjectLiteralExpression(unwrap(e)) || ts.isArrayLiteralExpression(unwrap(e)));

/** The body is one object or array literal: returned, or an arrow's expression. */
function isTable(node: FunctionNode): boolean {
  const body = node.body;
  if (!body) return false;
  if (!ts.isBlock(body)) return isLiteral(body);
  const [only, ...rest] = body.statements;
  return rest.length === 0 && only !== undefined && ts.isReturnStatement(only) && isLiteral(only.expression);
}

/** The name a node gives what it declares or holds, if any. */
function nameOf(node: ts.Node): string | undefined {
  if ((ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isFunctionExpression(node) || ts.isClassExpression(node)) && node.name)
    return node.name.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (
    ts.isMethodDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isPropertyDeclaration(node) ||
    ts.isPropertyAssignment(node) ||
    ts.isVariableDeclaration(node)
  )
    return ts.isIdentifier(node.name) || ts.isStringLiteral(node.name) || ts.isPrivateIdentifier(node.name) ? node.name.text : node.name.getText();
  return undefined;
}

/** A function's own name: its declaration's, or that of the variable, property or call argument holding it. */
function functionName(node: FunctionNode): string {
  const own = nameOf(node);
  if (own) return own;
  const holder = node.parent && nameOf(node.parent);
  if (holder) return holder;
  if (node.parent && ts.isCallExpression(node.parent)) return `(${node.parent.expression.getText().replace(/\s+/g, '')} callback)`;
  return '(anonymous)';
}

/** Every function of one file. */
export function measureFile(file: string, text = readFileSync(file, 'utf8')): FunctionLength[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: FunctionLength[] = [];
  const seen = new Map<string, number>();
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line + 1;
  const visit = (node: ts.Node, scope: readonly string[]) => {
    let inner = scope;
    if (isFunction(node)) {
      inner = [...scope, functionName(node)];
      const base = inner.join('/');
      const count = (seen.get(base) ?? 0) + 1;
      seen.set(base, count);
      const line = lineOf(node.getStart(source));
      found.push({ file, name: count === 1 ? base : `${base}#${count}`, line, lines: lineOf(node.getEnd()) - line + 1, table: isTable(node) });
    } else if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      inner = [...scope, nameOf(node) ?? nameOf(node.parent) ?? '(class)'];
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, []);
  return found;
}

/** Every function of lib/ and functions/, from the repository root (paths `/`-separated). */
export function measureTree(): FunctionLength[] {
  return ['lib', 'functions'].flatMap((dir) => [...sources(dir)].flatMap((file) => measureFile(file.split('\\').join('/'))));
}
