import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.tickfleet/**', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@tickfleet/*/src/*', '@tickfleet/*/internal/*'], message: 'import a package through its barrel' }] },
      ],
    },
  },
  {
    // The overview page's browser code (served as one module bundled from these files): it takes
    // only types from the server, and node's globals, which its tsconfig brings along with those
    // types, do not exist in a browser.
    files: ['apps/dashboard/src/client/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../*', 'node:*', '@tickfleet/*', 'uplot'], allowTypeImports: true, message: 'browser code: import only types from here' }] },
      ],
      'no-restricted-globals': ['error', 'process', 'Buffer', 'global', 'require', 'module', '__dirname', '__filename', 'setImmediate', 'clearImmediate'],
    },
  },
);
