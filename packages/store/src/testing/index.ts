export { describeStoreContract, type OpenStoreInNamespace } from './store-contract.js';
