// A client of the Plant Store written only against the types openapi-typescript generates from
// the served /openapi.json (./openapi.d.ts, made by tools/e2e-typescript.mjs) and openapi-fetch:
// it creates plants, pages through them following the Link header, changes one with PATCH and
// deletes them all. It must type-check with `strict` and without non-null assertions (`!`),
// `any` or ts-ignore comments (the driver refuses those), so a contract that leaves `Plant.id`
// optional, or mistypes a body, fails the build.
import createClient from "openapi-fetch";
import type { components, paths } from "./openapi.js";

type Plant = components["schemas"]["Plant"];
type ApiError = components["schemas"]["Error"];

function fail(what: string, status: number, error: ApiError): never {
  throw new Error(`${what}: HTTP ${status}: error ${error.error}: ${error.message}`);
}

// nextAfter reads the `after` cursor of an RFC 8288 `Link: <...>; rel="next"` header, or
// undefined on the last page. The cursor is opaque: a string, sent back unchanged.
function nextAfter(link: string | null, baseUrl: string): string | undefined {
  if (link === null) return undefined;
  const m = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link);
  if (m === null || m[1] === undefined) return undefined;
  const after = new URL(m[1], baseUrl).searchParams.get("after");
  if (after === null) throw new Error(`next link without after: ${link}`);
  return after; // an opaque cursor: sent back as it came
}

/** run drives the API at baseUrl with token; it throws on any unexpected answer. */
export async function run(baseUrl: string, token: string, log: (line: string) => void): Promise<void> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });

  // Create: ids 1..7, every other one with a tag; a replay of the same plant answers it again.
  const created: Plant[] = [];
  for (let id = 1; id <= 7; id++) {
    const body = id % 2 === 1 ? { id, name: `Plant ${id}`, tag: "green" } : { id, name: `Plant ${id}` };
    const { data, error, response } = await client.POST("/plants", { body });
    if (error !== undefined) fail(`create ${id}`, response.status, error);
    const stored: Plant = data;
    if (stored.id !== id || stored.name !== body.name) throw new Error(`create ${id}: got ${JSON.stringify(stored)}`);
    created.push(stored);
  }
  const replay = await client.POST("/plants", { body: { id: 1, name: "Plant 1", tag: "green" } });
  if (replay.error !== undefined) fail("replay", replay.response.status, replay.error);
  log(`created ${created.length} plants`);

  // Page: 3 at a time, following Link rel="next" until it is absent.
  const listed: Plant[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const { data, error, response } = await client.GET("/plants", {
      params: { query: after === undefined ? { limit: 3 } : { limit: 3, after } },
    });
    if (error !== undefined) fail("list", response.status, error);
    pages++;
    for (const p of data) listed.push(p);
    after = nextAfter(response.headers.get("Link"), baseUrl);
    if (pages > 10) throw new Error("more pages than plants");
  } while (after !== undefined);
  const ids = listed.map((p) => p.id).join(",");
  if (ids !== created.map((p) => p.id).join(",") || pages !== 3) {
    throw new Error(`paging: ${pages} pages, ids ${ids}`);
  }
  log(`listed ${listed.length} plants in ${pages} pages`);

  // Patch: rename plant 1 and drop its tag (JSON merge patch: null removes).
  const first = created[0];
  if (first === undefined) throw new Error("nothing created");
  const patched = await client.PATCH("/plants/{id}", {
    params: { path: { id: first.id } },
    body: { name: "Renamed", tag: null },
  });
  if (patched.error !== undefined) fail(`patch ${first.id}`, patched.response.status, patched.error);
  const renamed: Plant = patched.data;
  if (renamed.id !== first.id || renamed.name !== "Renamed" || renamed.tag !== undefined) {
    throw new Error(`patch: got ${JSON.stringify(renamed)}`);
  }
  const reread = await client.GET("/plants/{id}", { params: { path: { id: first.id } } });
  if (reread.error !== undefined) fail(`get ${first.id}`, reread.response.status, reread.error);
  if (reread.data.name !== "Renamed") throw new Error(`get after patch: ${JSON.stringify(reread.data)}`);
  log(`patched plant ${renamed.id}`);

  // Delete every listed plant by its id (a number, never undefined); then it is gone.
  for (const p of listed) {
    const { error, response } = await client.DELETE("/plants/{id}", { params: { path: { id: p.id } } });
    if (error !== undefined) fail(`delete ${p.id}`, response.status, error);
    if (response.status !== 204) throw new Error(`delete ${p.id}: HTTP ${response.status}`);
  }
  const gone = await client.GET("/plants/{id}", { params: { path: { id: first.id } } });
  if (gone.error === undefined || gone.response.status !== 404 || gone.error.error !== 40401) {
    throw new Error(`get after delete: HTTP ${gone.response.status} ${JSON.stringify(gone.error ?? gone.data)}`);
  }
  const rest = await client.GET("/plants", {});
  if (rest.error !== undefined) fail("list after delete", rest.response.status, rest.error);
  if (rest.data.length !== 0) throw new Error(`after delete: ${rest.data.length} plants left`);
  log(`deleted ${listed.length} plants`);
}
