// KeepsakeHTTP: an HTTP/1.1 client over libcurl (`HTTPClient`, `HTTPRequest`,
// `HTTPResponse`): bodies with a size cap, timeouts, cancellation, errors that name the
// request. Knows no S3: signing, XML and retries live with the S3 backend above it.
//
// Imports CCurl only. docs/architecture.md draws the whole graph.
