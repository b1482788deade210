// Renders the API reference from /openapi.json. The Redoc 3.x standalone bundle is an ES module
// exporting init (there is no global Redoc); the Go server serves it at /docs/redoc.standalone.js.
import { init } from '/docs/redoc.standalone.js';

init('/openapi.json', { disableTelemetry: true }, document.getElementById('redoc'));
