// sigma.js and graphology as ES module exports. Both are vendored as their self-contained
// UMD builds (web/vendor/*, see MANIFEST.json): the packages' ESM builds import bare names
// ("events", "graphology-utils") that a browser cannot resolve without a bundler. A UMD
// build evaluated as a module sees no `exports`/`define` and sets a global, read here once.
import "../vendor/graphology/graphology.umd.min.js";
import "../vendor/sigma/sigma.min.js";

export const Graph = globalThis.graphology.Graph;
export const Sigma = globalThis.Sigma;
