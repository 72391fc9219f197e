export { FleetHarness, type FleetProcess } from './fleet-harness.js';
