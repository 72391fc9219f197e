export { freePort } from '@tickfleet/queues';
