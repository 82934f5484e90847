// SPDX-License-Identifier: Apache-2.0
// Cell rewriting for the sbx JavaScript kernel. A cell becomes the body of an async arrow
// function run as a classic script in the kernel's global context:
//  - top-level `const`/`let`/`var` become assignments to globals (they persist between cells
//    and may be declared again), `class A {}` becomes `A = class A {}`, function declarations
//    stay hoisted and are also published on globalThis;
//  - `import x from 'm'` becomes `x = (await __sbx_import('m')).default` (same for named and
//    namespace imports), `import('m')` calls __sbx_import; `export` keywords are dropped;
//  - the value of a last expression statement is returned (the cell's main result);
//  - top-level await works because the wrapper is async.
// TypeScript is transpiled first (types stripped, modules kept) with the `typescript` package.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

function load(names) {
  for (const n of names) {
    try {
      return require(n)
    } catch {}
  }
  throw new Error(`cannot load ${names[names.length - 1]}`)
}

const acorn = load(['/usr/share/nodejs/acorn', 'acorn'])
let ts = null

export function transpileTs(code) {
  if (!ts) ts = load(['/usr/share/nodejs/typescript', 'typescript'])
  const out = ts.transpileModule(code, {
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      sourceMap: false,
      removeComments: false,
    },
  })
  const diag = (out.diagnostics || []).find((d) => d.category === ts.DiagnosticCategory.Error)
  if (diag) {
    const msg = ts.flattenDiagnosticMessageText(diag.messageText, '\n')
    let where = ''
    if (diag.file && diag.start !== undefined) {
      const { line, character } = diag.file.getLineAndCharacterOfPosition(diag.start)
      where = ` (${line + 1}:${character + 1})`
    }
    const e = new SyntaxError(msg + where)
    e.stack = `SyntaxError: ${msg}${where}`
    throw e
  }
  return out.outputText
}

// Every node below root, depth first (acorn nodes have a string `type`).
function walk(node, visit) {
  visit(node)
  for (const key of Object.keys(node)) {
    const v = node[key]
    if (Array.isArray(v)) {
      for (const c of v) if (c && typeof c.type === 'string') walk(c, visit)
    } else if (v && typeof v.type === 'string' && key !== 'type') {
      walk(v, visit)
    }
  }
}

function importReplacement(node, src) {
  const from = src(node.source)
  if (node.specifiers.length === 0) return `await __sbx_import(${from});`
  const parts = node.specifiers.map((s) => {
    if (s.type === 'ImportDefaultSpecifier') return `${s.local.name} = __sbx_m.default;`
    if (s.type === 'ImportNamespaceSpecifier') return `${s.local.name} = __sbx_m;`
    const name = s.imported.type === 'Literal' ? JSON.stringify(s.imported.value) : JSON.stringify(s.imported.name)
    return `${s.local.name} = __sbx_m[${name}];`
  })
  return `{ const __sbx_m = await __sbx_import(${from}); ${parts.join(' ')} }`
}

// `const a = 1, {b} = o` becomes `void (a = 1, {b} = o);` by edits around the declarators
// only, so that edits inside an initializer (an import() call) still apply.
function declarationEdits(node) {
  const d = node.declarations
  const last = d[d.length - 1]
  const edits = [[node.start, d[0].start, 'void (']]
  for (const x of d) if (!x.init && x !== last) edits.push([x.end, x.end, ' = undefined'])
  edits.push([last.end, node.end, `${last.init ? '' : ' = undefined'});`])
  return edits
}

export function rewrite(code) {
  const ast = acorn.parse(code, {
    ecmaVersion: 'latest',
    sourceType: 'module',
    allowAwaitOutsideFunction: true,
    allowReturnOutsideFunction: true,
    allowHashBang: true,
  })
  const src = (n) => code.slice(n.start, n.end)
  const edits = [] // [start, end, text]
  const hoisted = []
  const body = ast.body
  body.forEach((stmt, i) => {
    let node = stmt
    if (node.type === 'ExportNamedDeclaration' || node.type === 'ExportDefaultDeclaration') {
      if (!node.declaration) {
        edits.push([node.start, node.end, ''])
        return
      }
      edits.push([node.start, node.declaration.start, ''])
      node = node.declaration
    }
    if (node.type === 'ImportDeclaration') {
      edits.push([node.start, node.end, importReplacement(node, src)])
    } else if (node.type === 'VariableDeclaration') {
      edits.push(...declarationEdits(node))
    } else if (node.type === 'ClassDeclaration' && node.id) {
      edits.push([node.start, node.start, `${node.id.name} = `])
      edits.push([node.end, node.end, ';'])
    } else if (node.type === 'FunctionDeclaration' && node.id) {
      hoisted.push(`globalThis[${JSON.stringify(node.id.name)}] = ${node.id.name};`)
    } else if (node.type === 'ExpressionStatement' && i === body.length - 1) {
      edits.push([node.start, node.start, 'return ('])
      edits.push([node.expression.end, node.expression.end, ')'])
    }
  })
  walk(ast, (n) => {
    if (n.type === 'ImportExpression') edits.push([n.start, n.start + 6, '__sbx_import'])
  })
  edits.sort((a, b) => b[0] - a[0] || b[1] - a[1])
  let out = code
  for (const [s, e, t] of edits) out = out.slice(0, s) + t + out.slice(e)
  if (out.startsWith('#!')) out = '//' + out
  return `(async () => { ${hoisted.join(' ')}${out}\n})()`
}
