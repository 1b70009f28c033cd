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
  // d3's packages ship ES modules only; jest runs CommonJS, so tests load each
  // package's own UMD bundle (the same code, pre-built by d3).
  moduleNameMapper: {
    '^d3-(zoom|selection|dispatch|drag|interpolate|transition|timer|ease|color)$':
      '<rootDir>/node_modules/d3-$1/dist/d3-$1.js'
  },
  // Keep jest's cache out of the checkout's neighbours and in a known place.
  cacheDirectory: '<rootDir>/node_modules/.cache/jest'
};
