"""Endpoint probes: does a profile's endpoint, key and model work? Each probe costs at most a
handful of tokens (Anthropic: ``max_tokens: 1``; Responses: the API's minimum of 16 output tokens;
a models list costs none).

The only module outside the TUI that imports httpx. The shell's proxy variables are ignored
unless the profile sets them ([env], a tool's env table, or ``policy.inherit``). Keys are sent
only in the auth header and scrubbed from anything an endpoint answers.
"""

from __future__ import annotations

import functools
import os
import re
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from ccswitch_tui import tools
from ccswitch_tui.error_pages import page_summary
from ccswitch_tui.errors import CcsError
from ccswitch_tui.launch.plan import plan_for
from ccswitch_tui.model import ERROR, INFO, Finding, Profile
from ccswitch_tui.paths import Paths, resolve_paths
from ccswitch_tui.policy import mask, redact_url
from ccswitch_tui.safe_read import loads_json
from ccswitch_tui.tools.capabilities import Probing
from ccswitch_tui.tools.spec import ProbeSpec
from ccswitch_tui.valueclass import field, replace, valueclass

if TYPE_CHECKING:
    from ccswitch_tui.keys.keyring import KeyStore


ANTHROPIC_VERSION = "2023-06-01"
OK = "ok"
PATH_DOUBLED = "path-doubled"  # answered, at a URL with /v1 twice (what a launch warns about)
PROBE_KEY = "ccs-check"  # what the plan a probe is read from gets for a key: the plan never sends it


@valueclass(frozen=True)
class Probe:
    profile: str
    tool: str  # claude | codex | run
    api: str  # anthropic | anthropic-models | openai | openai-chat | openai-models
    method: str
    url: str
    model: str | None
    auth: str  # "bearer", or the header that carries the key (x-api-key, …)
    body: Mapping[str, Any] | None = None
    proxy: str | None = None
    fallback: Probe | None = None  # tried when this one answers 404/405 (a models list that is not served)
    key_id: str = "ID"  # for the hints: the profile's key id
    plan_error: str | None = None  # the side's launch cannot even be planned (nothing is sent)
    note: str | None = None  # how the model was chosen, when the client picks it (the spec says)

    def signature(self) -> tuple[Any, ...]:
        return (self.method, self.url, self.model, self.auth, self.proxy)


@valueclass(frozen=True)
class ProbeResult:
    profile: str
    tool: str
    api: str
    method: str
    url: str
    model: str | None
    outcome: str
    http_status: int | None = None
    latency_ms: int | None = None
    detail: str = ""
    hint: str = ""
    proxy: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # a key-missing result: the key's error itself, for a front end to word its way out (``remedy``)
    key_error: CcsError | None = field(default=None, compare=False, repr=False)
    note: str | None = None  # how the model was chosen, when the client picks it

    @property
    def ok(self) -> bool:
        return self.outcome == OK

    def finding(self) -> Finding:
        msg = f"{self.method} {self.url}" + (f" (model {self.model})" if self.model else "") + f": {self.outcome}"
        if self.http_status:
            msg += f" (HTTP {self.http_status})"
        if self.ok and self.latency_ms is not None:
            msg += f" in {self.latency_ms} ms"
        if self.detail:
            msg += f"; {self.detail}"
        if self.note:
            msg += f"; {self.note}"
        if self.hint:
            msg += f"; {self.hint}"
        return Finding(self.outcome, INFO if self.ok else ERROR, msg, path=f"{self.profile}/{self.tool}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "tool": self.tool,
            "api": self.api,
            "method": self.method,
            "url": self.url,
            "model": self.model,
            "outcome": self.outcome,
            "ok": self.ok,
            "http_status": self.http_status,
            "latency_ms": self.latency_ms,
            "detail": self.detail,
            "hint": self.hint,
            "proxy": redact_url(self.proxy) if self.proxy else None,
            "model_note": self.note,
        }


# --- planning the probes --------------------------------------------------------------------------

def proxy_for(url: str, env: Mapping[str, str]) -> str | None:
    """The proxy the profile's own environment asks for this URL (the shell's is not consulted)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()

    def get(*names: str) -> str | None:
        for n in names:
            if env.get(n):
                return env[n]
        return None

    no_proxy = get("NO_PROXY", "no_proxy") or ""
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return None
        entry = entry.split(":")[0].lstrip(".")
        if host == entry or host.endswith("." + entry):
            return None
    if parts.scheme == "https":
        return get("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
    return get("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def sides(profile: Profile) -> list[str]:
    """The tool sides a profile serves that can be probed (`ccs run` only when it exports something)."""
    run = profile.side("run")
    return [t for t in profile.tools if t != "run" or (run is not None and run.exports_anything)]


def plan_probes(profile: Profile, tool: str | None, environ: Mapping[str, str], *,
                paths: Paths | None = None, cwd: Path | None = None) -> list[Probe]:
    """The probes for ``profile`` (one tool side, or every side it serves): each side's spec reads
    them from the plan its launch would use, so what is probed is what is launched."""
    paths = paths or resolve_paths(environ)
    cwd = cwd or Path.cwd()
    out: list[Probe] = []
    for side in ([tool] if tool else sides(profile)):
        if side not in profile.tools:
            continue
        spec = tools.load().get(side)
        try:
            plan = plan_for(profile, side, PROBE_KEY, environ, cwd, paths=paths)
        except CcsError as exc:  # e.g. a broken config file in the profile's state: the launch would fail too
            out.append(Probe(profile.name, side, "-", "-", "", None, "bearer", plan_error=str(exc)))
            continue
        env = {k: v for k, v in plan.env.items() if k not in plan.secret_names}

        def probe(p: ProbeSpec, side: str = side, env: Mapping[str, str] = env) -> Probe:
            return Probe(profile.name, side, p.api, p.method, p.url, p.model, p.auth, p.body,
                         proxy_for(p.url, env), probe(p.fallback) if p.fallback else None, note=p.note)

        out += [probe(p) for p in spec.probes(plan, profile)] if isinstance(spec, Probing) else []
    return out


# --- running one probe ---------------------------------------------------------------------------

_MODEL_WORDS = re.compile(
    r"model_not_found|not[ _]found|does not exist|not exist|unknown|invalid|not supported|unsupported|no such|"
    r"not available|unavailable|not allowed", re.IGNORECASE)


def _error_fields(resp: httpx.Response) -> dict[str, str] | None:
    """The error object of a JSON error answer (type, code, param, message), or None for any other body:
    an HTML or plain-text page comes from a proxy or a web server, not from the API."""
    try:
        data = loads_json(resp.text[:4000])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    err = data.get("error")
    if isinstance(err, str):
        return {"message": err}
    if not isinstance(err, dict):
        err = data
    return {k: str(err[k]) for k in ("type", "code", "param", "message", "detail") if err.get(k) is not None}


def _error_text(resp: httpx.Response) -> str:
    text = resp.text[:4000]
    try:
        data = loads_json(text)
    except ValueError:
        page = page_summary(text)  # an HTML error page: what its heading (or title, or text) says
        return " ".join((text if page is None else page).split())[:300]
    msg: Any = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            kind = err.get("type") or err.get("code")
            msg = ": ".join(str(x) for x in (kind, err.get("message")) if x)
        elif isinstance(err, str):
            msg = err
        msg = msg or data.get("message") or data.get("detail")
    return " ".join(str(msg if msg else text).split())[:300]


def _mentions_unknown_model(fields: Mapping[str, str] | None, model: str | None, scrub: Callable[[str], str]) -> bool:
    """Whether an API's JSON error says the model is unknown. Judged by the body only: a page that is not
    a JSON error (a proxy's or web server's 404) never is, whatever URL it echoes."""
    if not fields:
        return False
    if any("model_not_found" in fields.get(k, "").lower() for k in ("type", "code")) or fields.get("param") == "model":
        return True
    said = " ".join(fields.get(k, "") for k in ("message", "detail", "type", "code"))
    text = re.sub(r"\S*/\S*", " ", scrub(said))  # paths and URLs left out: "/v1/models" is no model
    low = text.lower()
    named = model is not None and model.lower() in low
    return (named or re.search(r"\bmodel\b", low) is not None) and bool(_MODEL_WORDS.search(text))


def _not_found_hint(probe: Probe) -> str:
    path = urlsplit(probe.url).path
    if re.search(r"/v1/v1(/|$)", path):
        fix = tools.load().probe_hint("anthropic:double-v1") if probe.api.startswith("anthropic") else ""
        return "the path has /v1 twice: " + (fix or "remove one /v1 from the base_url")
    if probe.api == "openai-chat":
        base = probe.url.removesuffix("/chat/completions")
        if not re.search(r"/v\d+[a-z]*(/|$)", path):
            return (f"there is no /v1 in the base_url; most OpenAI-compatible endpoints serve "
                    f"{base}/v1/chat/completions: try base_url = {base}/v1")
        return "check the base_url's path: requests go to {base_url}/chat/completions"
    if probe.api in ("openai", "openai-models") and not re.search(r"/v\d+[a-z]*(/|$)", path):
        base = probe.url.rsplit("/", 1)[0]
        return (f"there is no /v1 in the base_url; most OpenAI-compatible endpoints serve {base}/v1/"
                f"{probe.url.rsplit('/', 1)[1]}: try base_url = {base}/v1")
    if probe.api == "anthropic":
        return tools.load().probe_hint("anthropic:not-found")
    return "check the base_url's path: requests go to {base_url}/responses"


def _classify(probe: Probe, resp: httpx.Response, scrub: Callable[[str], str]) -> tuple[str, str, str]:
    """(outcome, detail, hint) for an HTTP answer."""
    status = resp.status_code
    text = scrub(_error_text(resp)) if status >= 300 else ""
    if 200 <= status < 300:
        return OK, "", ""
    if status in (401, 403):
        kid = probe.key_id
        how = (f"check it with `ccs key show {kid}`, replace it with `ccs key set {kid}`" if not kid.startswith("env:")
               else f"check ${kid[4:]} in this shell")
        return "auth-failed", text, (f"the key was refused: {how}, and {tools.load().probe_hint('anthropic:auth')}"
                                     if probe.api.startswith("anthropic") else f"the key was refused: {how}")
    if status == 429:
        return "rate-limited", text, "the endpoint and key answer, but this key is rate-limited or out of quota now"
    if status >= 500:
        return "server-error", text, "the endpoint failed on its side; try again later or ask the provider"
    if status in (400, 404, 422) and _mentions_unknown_model(_error_fields(resp), probe.model, scrub):
        return "model-unknown", text, (f"the endpoint does not know model {probe.model!r}; pick one it serves "
                                       f"(`ccs edit {probe.profile}`)")
    if status in (404, 405):
        return "not-found", text, _not_found_hint(probe)
    if 300 <= status < 400:
        where = resp.headers.get("location", "?")
        return ("redirected", f"redirected to {where}",
                "put the final URL in the base_url (probes do not follow redirects)")
    return "bad-request", text, f"the endpoint refused the probe (HTTP {status})"


def _exception(exc: Exception, probe: Probe, timeout: float) -> tuple[str, str]:
    host = urlsplit(probe.url).netloc
    if isinstance(exc, httpx.ConnectTimeout):
        return "timeout", f"no connection to {host} within {timeout:g} s"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", f"connected to {host}, but no answer within {timeout:g} s"
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 8:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    text = " | ".join(str(e) for e in chain if str(e))
    low = text.lower()
    if isinstance(exc, httpx.ProxyError) or ("proxy" in low and probe.proxy):
        return "unreachable", f"proxy {redact_url(probe.proxy or '?')}: {str(exc) or type(exc).__name__}"
    if any(isinstance(e, ssl.SSLError) for e in chain) or "ssl" in low or "certificate" in low or "tls" in low:
        return "unreachable", f"TLS with {host} failed: {str(exc) or type(exc).__name__}"
    if any(s in low for s in ("name or service not known", "nodename nor servname", "temporary failure in name",
                              "no address associated", "getaddrinfo", "name resolution", "errno -2", "errno -3",
                              "errno -5")):
        return "unreachable", f"DNS: host {urlsplit(probe.url).hostname} not found"
    if "refused" in low:
        return "unreachable", f"connection to {host} refused (nothing listens there)"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "unreachable", f"{host} closed the connection without an answer"
    return "unreachable", f"{type(exc).__name__}: {str(exc) or 'no detail'}"


def _models_check(resp: httpx.Response, model: str | None, profile: str) -> tuple[str, str, str] | None:
    """For a models list: model-unknown when the list is readable and lacks the model."""
    if model is None:
        return None
    try:
        data = loads_json(resp.text)
    except ValueError:
        return None
    items = data.get("data") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return None
    ids = {str(i.get("id")) for i in items if isinstance(i, dict) and i.get("id")}
    if ids and model not in ids:
        return ("model-unknown", f"{len(ids)} models listed, {model!r} is not among them",
                f"pick a model the endpoint lists (`ccs edit {profile}`)")
    return None


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every probe of a run: loading the CA bundle takes tens of milliseconds."""
    return httpx.create_ssl_context()


def _client(probe: Probe, timeout: float) -> httpx.Client:
    return httpx.Client(trust_env=False, proxy=probe.proxy, timeout=httpx.Timeout(timeout),
                        follow_redirects=False, verify=_tls_context())


def run_probe(probe: Probe, key: str, timeout: float) -> ProbeResult:  # noqa: C901
    headers = {"accept": "application/json", "user-agent": "ccs-check"}
    if probe.auth == "bearer":
        headers["authorization"] = f"Bearer {key}"
    else:  # the header the client sends its key in (x-api-key, …)
        headers[probe.auth] = key
    if probe.api.startswith("anthropic"):
        headers["anthropic-version"] = ANTHROPIC_VERSION

    def scrub(text: str) -> str:
        return text.replace(key, mask(key)) if key and key in text else text

    base = ProbeResult(probe.profile, probe.tool, probe.api, probe.method, probe.url, probe.model, "?",
                       proxy=probe.proxy, note=probe.note)
    try:
        # The client (and its TLS setup) is made before the clock starts: the latency is the request's.
        with _client(probe, timeout) as client:
            start = time.monotonic()
            resp = client.request(probe.method, probe.url, headers=headers,
                                  json=dict(probe.body) if probe.body is not None else None)
            resp.read()
            latency = int((time.monotonic() - start) * 1000)
    except Exception as exc:  # noqa: BLE001 — every failure becomes an outcome
        outcome, detail = _exception(exc, probe, timeout)
        return replace(base, outcome=outcome, detail=scrub(detail))
    outcome, detail, hint = _classify(probe, resp, scrub)
    doubled = re.search(r"/v1/v1(/|$)", urlsplit(probe.url).path)
    if doubled and outcome == OK:  # the launch warns about it: a check does not pass it as fine
        # the hint says what is doubled and how to fix it; the detail only what was answered
        outcome, detail = PATH_DOUBLED, f"answered HTTP {resp.status_code}, as some gateways do at any path"
        hint = _not_found_hint(probe)
    elif doubled and outcome != "not-found":
        hint = _not_found_hint(probe)  # whatever the answer, a doubled /v1 is the first thing to fix
    if outcome == OK and probe.api == "openai-models":
        better = _models_check(resp, probe.model, probe.profile)
        if better:
            outcome, detail, hint = better
    if outcome == "not-found" and probe.fallback is not None:
        fb = run_probe(probe.fallback, key, timeout)
        instead = "Messages API" if probe.fallback.api == "anthropic" else "Responses API"
        return replace(fb, detail=(fb.detail + "; " if fb.detail else "") + f"{probe.url} is not served, so the "
                       f"{instead} was probed instead")
    if outcome == "not-found" and probe.api == "openai":
        models = _sibling_models(probe, headers, timeout)
        if models is not None:
            hint = (f"{models} answers, but {probe.url} does not: this endpoint has no Responses API; "
                    + tools.load().probe_hint("openai:no-responses"))
    return replace(base, outcome=outcome, http_status=resp.status_code, latency_ms=latency, detail=detail, hint=hint)


def _sibling_models(probe: Probe, headers: Mapping[str, str], timeout: float) -> str | None:
    """The models list next to a /responses that was not found, when that list answers 200."""
    url = probe.url.rsplit("/", 1)[0] + "/models"
    try:
        with _client(probe, timeout) as client:
            if client.get(url, headers=dict(headers)).status_code == 200:
                return url
    except Exception:  # noqa: BLE001 — only a hint
        return None
    return None


# --- profiles ------------------------------------------------------------------------------------

def _key_failure(probe: Probe, error: CcsError | None) -> ProbeResult:
    return ProbeResult(probe.profile, probe.tool, probe.api, probe.method, probe.url, probe.model, "key-missing",
                       detail=str(error) if error else "no key", hint="nothing was sent", key_error=error,
                       note=probe.note)


def check_profiles(  # noqa: C901
    profiles: Sequence[Profile], keys: KeyStore, *, tool: str | None = None, timeout: float = 10.0,
    environ: Mapping[str, str] | None = None, progress: Callable[[int, int, ProbeResult], None] | None = None,
    max_workers: int = 16,
) -> list[ProbeResult]:
    """Probe every side of every profile, concurrently; results in profile, then side order."""

    environ = os.environ if environ is None else environ
    jobs: list[tuple[int, Probe, str | None, CcsError | None]] = []  # (order, probe, key, key error)
    key_cache: dict[str, tuple[str | None, CcsError | None]] = {}
    for p in profiles:
        if p.key_id not in key_cache:
            try:
                key_cache[p.key_id] = (keys.resolve(p), None)
            except CcsError as exc:
                key_cache[p.key_id] = (None, exc)
        key, err = key_cache[p.key_id]
        for probe in plan_probes(p, tool, environ, paths=getattr(keys, "paths", None)):
            fallback = probe.fallback and replace(probe.fallback, key_id=p.key_id)
            probe = replace(probe, key_id=p.key_id, fallback=fallback)
            jobs.append((len(jobs), probe, key, err if key is None else None))

    results: dict[int, ProbeResult] = {}
    seen: dict[tuple[Any, ...], int] = {}
    todo: list[tuple[int, Probe, str]] = []
    dupes: dict[int, int] = {}
    for order, probe, key, err in jobs:
        if probe.plan_error:
            results[order] = ProbeResult(probe.profile, probe.tool, probe.api, probe.method, probe.url, None,
                                         "profile-invalid", detail=probe.plan_error, hint="nothing was sent")
            continue
        if key is None:
            results[order] = _key_failure(probe, err)
            continue
        sig = (probe.profile, *probe.signature())
        if sig in seen:
            dupes[order] = seen[sig]
            continue
        seen[sig] = order
        todo.append((order, probe, key))

    total = len(jobs)
    done = len(results)
    for order in sorted(results):
        if progress:
            progress(min(done, total), total, results[order])
    if todo:
        _tls_context()  # once, before the threads start
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(todo)))) as pool:
            futures = {pool.submit(run_probe, probe, key, timeout): order for order, probe, key in todo}
            for fut in as_completed(futures):
                order = futures[fut]
                results[order] = fut.result()
                done += 1
                if progress:
                    progress(done, total, results[order])
    for order, original in dupes.items():
        probe = jobs[order][1]
        results[order] = replace(results[original], tool=probe.tool,
                                 detail=(results[original].detail + "; " if results[original].detail else "")
                                 + f"same request as the {results[original].tool} probe")
        done += 1
        if progress:
            progress(done, total, results[order])
    return [results[i] for i in sorted(results)]


def check_profile(profile: Profile, keys: KeyStore, *, tool: str | None = None, timeout: float = 10.0,
                  environ: Mapping[str, str] | None = None) -> list[ProbeResult]:
    return check_profiles([profile], keys, tool=tool, timeout=timeout, environ=environ)
