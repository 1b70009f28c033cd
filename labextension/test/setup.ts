/**
 * Fill the gaps of jest's jsdom environment that the code under test hits.
 */
import { deserialize, serialize } from 'v8';

const scope = globalThis as { DragEvent?: unknown; structuredClone?: unknown };

// @lumino/dragdrop (pulled in by @lumino/widgets) references DragEvent when
// its module loads.
if (scope.DragEvent === undefined) {
  scope.DragEvent = class DragEvent extends MouseEvent {};
}

// dagre uses structuredClone (every current browser has it; jsdom does not).
// V8's serializer implements the same structured clone algorithm.
if (scope.structuredClone === undefined) {
  scope.structuredClone = <T>(value: T): T =>
    deserialize(serialize(value)) as T;
}
