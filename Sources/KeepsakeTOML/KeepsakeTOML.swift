// KeepsakeTOML: the subset of TOML that `config.toml` uses, read strictly (`TOMLParser`):
// tables, arrays of tables, strings, integers, booleans, arrays, dates as strings; every
// failure a `TOMLError` with its line and column. Values only: what a key means is the
// configuration's business.
//
// Imports KeepsakeSupport only: never the engine, storage, the configuration or the
// terminal. docs/architecture.md draws the whole graph.
