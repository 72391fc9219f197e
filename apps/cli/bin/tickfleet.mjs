#!/usr/bin/env node
// The `tickfleet` binary: runs the TypeScript sources, from a cached bundle of them
// (./cli-bundle.mjs; rebuilt when a source changes) or through tsx's loader.
import { runCli } from './cli-bundle.mjs';

await runCli();
