/**
 * Unit tests of the lab extension (labextension/test), run by `jlpm test`.
 * ts-jest compiles TypeScript; jsdom provides the DOM the panel renders into.
 */
module.exports = {
  testEnvironment: 'jsdom',
  roots: ['<rootDir>/labextension/test'],
  testRegex: '\\.spec\\.ts$',
  setupFiles: ['<rootDir>/labextension/test/setup.ts'],
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      { tsconfig: '<rootDir>/labextension/test/tsconfig.json' }
    ]
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  // Keep jest's cache out of the checkout's neighbours and in a known place.
  cacheDirectory: '<rootDir>/node_modules/.cache/jest'
};
