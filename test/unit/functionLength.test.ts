import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * No function body in src/ over 80 lines (issue 20: a use case a reader can enter is a named function
 * of a readable length, not a factory closure). Measured on the syntax tree: the lines between the
 * braces of every function, method, constructor, accessor and block-bodied arrow function.
 * Run it alone: `npx vitest run test/unit/functionLength.test.ts`; it prints the longest ten.
 */
const MAX_BODY_LINES = 80;
const root = resolve(import.meta.dirname, '..', '..');

const filesUnder = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
  const path = join(dir, entry.name);
  if (entry.isDirectory()) return entry.name === 'public' ? [] : filesUnder(path);
  return entry.name.endsWith('.ts') ? [path] : [];
});

interface Measured { where: string, name: string, lines: number }

type FunctionLike = ts.FunctionDeclaration | ts.FunctionExpression | ts.ArrowFunction | ts.MethodDeclaration |
  ts.ConstructorDeclaration | ts.GetAccessorDeclaration | ts.SetAccessorDeclaration;

const isFunctionLike = (node: ts.Node): node is FunctionLike =>
  ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node) || ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node);

function nameOf (node: FunctionLike): string {
  if (!ts.isConstructorDeclaration(node) && node.name !== undefined) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText();
  return ts.isConstructorDeclaration(node) ? 'constructor' : '(anonymous)';
}

/** Every block-bodied function of a source text with the number of lines between its braces. */
export function functionBodies (fileName: string, text: string): Measured[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: Measured[] = [];
  const visit = (node: ts.Node): void => {
    if (isFunctionLike(node) && node.body !== undefined && ts.isBlock(node.body)) {
      const open = source.getLineAndCharacterOfPosition(node.body.getStart(source)).line;
      const close = source.getLineAndCharacterOfPosition(node.body.getEnd()).line;
      found.push({ where: `${fileName}:${open + 1}`, name: nameOf(node), lines: Math.max(0, close - open - 1) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('function length', () => {
  it('measures a body as the lines between its braces, nested functions on their own', () => {
    const inner = Array.from({ length: 3 }, (_, i) => `    const v${i} = ${i};`).join('\n');
    const text = `function outer () {\n  const f = () => {\n${inner}\n  };\n  return f;\n}\n`;
    expect(functionBodies('x.ts', text).map(({ name, lines }) => [name, lines])).toEqual([['outer', 6], ['f', 3]]);
  });

  it(`no function body in src/ is longer than ${MAX_BODY_LINES} lines`, () => {
    const measured = filesUnder(join(root, 'src'))
      .flatMap((file) => functionBodies(relative(root, file), readFileSync(file, 'utf8')))
      .sort((a, b) => b.lines - a.lines);
    expect(measured.length).toBeGreaterThan(500);
    console.log(`the longest function bodies in src/:\n${measured.slice(0, 10).map((m) => `  ${m.lines}  ${m.name}  ${m.where}`).join('\n')}`);
    expect(measured.filter((m) => m.lines > MAX_BODY_LINES).map((m) => `${m.where} ${m.name}: ${m.lines} lines`)).toEqual([]);
  });
});
