// KeepsakeJSON: JSON as values (`JSONValue`, `JSONObject`), a bounded parser (`JSONParser`:
// depth and number limits, exact integers) and a writer, for manifests, summaries, records
// and `--json`. Knows nothing of what the JSON means.
//
// Imports KeepsakeSupport only. docs/architecture.md draws the whole graph.
