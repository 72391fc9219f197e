export { FleetHarness, type CandleReport, type FleetProcess } from './fleet-harness.js';
