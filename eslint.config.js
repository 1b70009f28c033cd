/**
 * ESLint for the lab extension's TypeScript (labextension/src, labextension/test) and the
 * repository's JavaScript configs, run by `jlpm lint`. Formatting is Prettier's job
 * (`jlpm prettier:check`), so eslint-config-prettier turns the stylistic rules off.
 */
const { defineConfig, globalIgnores } = require('eslint/config');
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const prettier = require('eslint-config-prettier');

module.exports = defineConfig([
  // build output, dependencies and the Python side
  globalIgnores([
    'lib/',
    'node_modules/',
    'kernel_ext/',
    '.yarn/',
    '.venv/',
    'coverage/',
    'tests/',
    'benchmarks/',
    'examples/'
  ]),
  js.configs.recommended,
  tseslint.configs.recommended,
  prettier,
  {
    rules: {
      // `export namespace Panel { export interface IOptions ... }` is the Lumino/JupyterLab
      // convention for a class's companion types, which this extension follows.
      '@typescript-eslint/no-namespace': 'off',
      // A leading underscore marks a parameter a signal or callback signature requires but
      // the handler does not read (as tsconfig's noUnusedParameters allows).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_'
        }
      ]
    }
  },
  {
    // The tests feed the protocol's validators malformed messages on purpose; `any` is how
    // they reach past the message types.
    files: ['labextension/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' }
  },
  {
    // the CommonJS configs (this file, jest.config.js) run under Node
    files: ['*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly'
      }
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' }
  }
]);
