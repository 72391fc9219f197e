import { Collection } from './collection.js';
import { CommandError } from './command-error.js';

const BAD_DB_CHARS = /[/\\. "$*<>:|?\0]/;

/** All databases and their collections, created implicitly on first write as in MongoDB. */
export class DatabaseCatalog {
  private readonly databases = new Map<string, Map<string, Collection>>();

  collection(db: string, name: string): Collection | undefined {
    return this.databases.get(db)?.get(name);
  }

  /** The collection, creating it (and its database) when missing. */
  ensure(db: string, name: string): { collection: Collection; created: boolean } {
    const existing = this.collection(db, name);
    if (existing) return { collection: existing, created: false };
    DatabaseCatalog.checkNames(db, name);
    const collection = new Collection(db, name);
    this.install(collection);
    return { collection, created: true };
  }

  private install(collection: Collection): void {
    let collections = this.databases.get(collection.db);
    if (!collections) {
      collections = new Map();
      this.databases.set(collection.db, collections);
    }
    collections.set(collection.name, collection);
  }

  collections(db: string): Collection[] {
    return [...(this.databases.get(db)?.values() ?? [])];
  }

  databaseNames(): string[] {
    return [...this.databases.keys()];
  }

  dropCollection(db: string, name: string): Collection | undefined {
    const collections = this.databases.get(db);
    const collection = collections?.get(name);
    if (collections && collection) {
      collections.delete(name);
      if (collections.size === 0) this.databases.delete(db);
    }
    return collection;
  }

  /**
   * Moves `source` to `toDb.toName` with its documents and indexes, replacing any collection
   * there. Built completely before it is swapped in, so a failure changes nothing.
   */
  rename(source: Collection, toDb: string, toName: string): void {
    const target = new Collection(toDb, toName);
    for (const spec of source.indexSpecs()) if (spec.name !== '_id_') target.createIndex(spec);
    for (const doc of source.all()) target.insert(doc);
    this.dropCollection(source.db, source.name);
    this.install(target);
  }

  dropDatabase(db: string): void {
    this.databases.delete(db);
  }

  /** All collections of all databases (for the TTL sweep). */
  everyCollection(): Collection[] {
    return [...this.databases.values()].flatMap((c) => [...c.values()]);
  }

  static checkNames(db: string, name: string): void {
    if (db.length === 0 || BAD_DB_CHARS.test(db)) throw new CommandError('InvalidNamespace', `Invalid database name: '${db}'`);
    if (name.length === 0 || name.includes('\0') || name.includes('$') || name.startsWith('.') || name.startsWith('system.')) {
      throw new CommandError('InvalidNamespace', `Invalid collection name: ${db}.${name}`);
    }
  }
}
