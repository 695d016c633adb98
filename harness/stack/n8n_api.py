"""n8n's public API (X-N8N-API-KEY) and the headless owner/API-key bootstrap.

A credential whose data carries an OAuth2 token (``oauthTokenData``) is created through the
editor's REST API with the owner's session instead: the public API refuses every field its
type does not show (``public-api .../credentials.utils`` ``validateCredentialData``,
``additionalProperties: false`` over the non-hidden properties), while the editor's
``POST /rest/credentials`` takes any data object and encrypts it with n8n's own Cipher
(``CredentialsService.createCredential``), as the OAuth2 callback would have stored it.

Publication: on 2.40+ ``/publish`` goes through an outbox and the webhook may register after
the 200, so ``publish_and_wait`` polls the production webhook until it stops answering 404.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

import httpx

from harness import loopback
from harness.errors import SetupError
from harness.stack.execution_failure import NodeFailure, node_failure

log = logging.getLogger(__name__)

API_KEY_SCOPES = [
    "workflow:create",
    "workflow:read",
    "workflow:list",
    "workflow:update",
    "workflow:delete",
    "workflow:activate",
    "workflow:deactivate",
    "execution:read",
    "execution:list",
    "execution:retry",
    "execution:stop",
    "execution:delete",
    "credential:create",
    "credential:delete",
]

# The public API's workflow schema (n8n 2.40 public-api/v1/openapi.yml) has
# additionalProperties: false and refuses on create what an editor export carries as
# read-only: id, active, versionId, meta, tags, createdAt, updatedAt, isArchived,
# triggerCount. parentFolderId, shared and activeVersion name state of the exporting instance
# (a folder, a project, a published version) that the test n8n does not have. Every other
# field of the file (pinData, description, staticData, ...) is sent as it is.
WORKFLOW_FIELDS_REFUSED_ON_CREATE = frozenset(
    {
        "id",
        "active",
        "versionId",
        "meta",
        "tags",
        "createdAt",
        "updatedAt",
        "isArchived",
        "triggerCount",
        "parentFolderId",
        "shared",
        "activeVersion",
    }
)
# Its workflowSettings also has additionalProperties: false: a setting this n8n does not
# know (from another version) is refused, so only these are sent.
WORKFLOW_SETTINGS = frozenset(
    {
        "saveExecutionProgress",
        "saveManualExecutions",
        "saveDataErrorExecution",
        "saveDataSuccessExecution",
        "executionTimeout",
        "errorWorkflow",
        "timezone",
        "executionOrder",
        "binaryMode",
        "callerPolicy",
        "callerIds",
        "timeSavedMode",
        "timeSavedPerExecution",
        "redactionPolicy",
        "availableInMCP",
        "customTelemetryTags",
        "credentialResolverId",
    }
)


def creatable(workflow: dict[str, Any]) -> dict[str, Any]:
    """The workflow as the public API accepts it on create (see the two sets above). The API
    requires settings: an export without them gets empty ones, which n8n reads as the file
    would be read on import (its older execution order, not v1)."""
    body = {k: v for k, v in workflow.items() if k not in WORKFLOW_FIELDS_REFUSED_ON_CREATE}
    settings = body.get("settings")
    if isinstance(settings, dict):
        # null is how the editor exports an unset setting; the API wants it absent.
        body["settings"] = {
            k: v for k, v in settings.items() if k in WORKFLOW_SETTINGS and v is not None
        }
    else:
        body["settings"] = {}
    return body


# What n8n's request validator says of a field it refuses: a setting's value ("request/body/
# settings/timezone must be ..."), or keys it does not know ("request/body Unrecognized
# key(s) in object: 'description', 'notes'").
_REFUSED_SETTING = re.compile(r"request/body/settings/(\w+)")
_UNKNOWN_KEYS = re.compile(r"request/body(/settings)? Unrecognized key\(s\) in object: (.*)")


def refused_fields(response: httpx.Response, body: dict[str, Any]) -> list[tuple[str, ...]]:
    """The fields (paths into the body) a 400 refuses that the body still has: fields another
    n8n version wrote, or that exporters add (``notes``)."""
    if response.status_code != 400:
        return []
    settings = body.get("settings") or {}
    unknown = _UNKNOWN_KEYS.search(response.text)
    if unknown is not None:
        names = re.findall(r"'([^']+)'", unknown.group(2))
        inside = ("settings",) if unknown.group(1) else ()
        where = settings if inside else body
        return [(*inside, name) for name in names if name in where]
    setting = _REFUSED_SETTING.search(response.text)
    return [("settings", setting.group(1))] if setting and setting.group(1) in settings else []


@dataclass(frozen=True)
class Owner:
    email: str
    password: str
    api_key: str


def _check(response: httpx.Response, doing: str) -> Any:
    if response.is_success:
        return response.json() if response.content else None
    raise SetupError(f"n8n refused to {doing}: HTTP {response.status_code} {response.text[:500]}")


def bootstrap_owner(base_url: str) -> Owner:
    """Create the owner account and an API key; both secrets are new for every run."""
    email = "chaos-owner@n8n-chaos.invalid"
    password = "Chaos-" + secrets.token_urlsafe(16) + "9"  # n8n wants a digit and an uppercase
    with loopback.client(base_url=base_url, timeout=30) as client:
        _check(
            client.post(
                "/rest/owner/setup",
                json={
                    "email": email,
                    "firstName": "Chaos",
                    "lastName": "Owner",
                    "password": password,
                },
            ),
            "set up the owner account",
        )
        created = _check(
            client.post(
                "/rest/api-keys",
                json={
                    "label": "n8n-chaos",
                    "scopes": API_KEY_SCOPES,
                    "expiresAt": None,
                },
            ),
            "create an API key",
        )
    raw = created.get("data", created)["rawApiKey"]
    return Owner(email=email, password=password, api_key=str(raw))


# The editor's session is bound to a browser id (n8n's auth cookie carries its hash).
BROWSER_ID = "n8n-chaos"
OAUTH_TOKEN_FIELD = "oauthTokenData"


class N8nApi:
    """A small typed client of the public API, for setup and for the oracle's evidence.
    ``owner`` (its email and password) is needed only to create OAuth2 credentials that carry
    a token (see the module's docstring)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout_s: float = 30.0,
        owner: Owner | None = None,
    ) -> None:
        self.base_url = base_url
        self._owner = owner
        self._timeout_s = timeout_s
        self._session: httpx.Client | None = None
        self._client = loopback.client(
            base_url=f"{base_url}/api/v1",
            headers={"X-N8N-API-KEY": api_key},
            timeout=timeout_s,
        )

    def close(self) -> None:
        self._client.close()
        if self._session is not None:
            self._session.close()

    # -- credentials and workflows ----------------------------------------------------
    def create_credential(self, name: str, type_: str, data: dict[str, Any]) -> str:
        if OAUTH_TOKEN_FIELD in data:
            return self._create_credential_in_editor(name, type_, data)
        body = _check(
            self._client.post(
                "/credentials",
                json={
                    "name": name,
                    "type": type_,
                    "data": data,
                },
            ),
            f"create credential {name!r}",
        )
        return str(body["id"])

    def _create_credential_in_editor(self, name: str, type_: str, data: dict[str, Any]) -> str:
        body = _check(
            self._editor().post("/credentials", json={"name": name, "type": type_, "data": data}),
            f"create credential {name!r} with its OAuth2 token",
        )
        return str(body.get("data", body)["id"])

    def _editor(self) -> httpx.Client:
        """The owner's session on the editor's REST API (logged in once, on first use)."""
        if self._session is None:
            if self._owner is None:
                raise SetupError(
                    "creating an OAuth2 credential with its token needs the owner's login, "
                    "which this API client was not given (N8nApi(..., owner=...))"
                )
            session = loopback.client(
                base_url=f"{self.base_url}/rest",
                headers={"browser-id": BROWSER_ID},
                timeout=self._timeout_s,
            )
            login = {"emailOrLdapLoginId": self._owner.email, "password": self._owner.password}
            try:
                _check(session.post("/login", json=login), "log the owner in")
            except SetupError:
                session.close()
                raise
            self._session = session
        return self._session

    def create_workflow(self, workflow: dict[str, Any]) -> str:
        body = creatable(workflow)
        while True:
            response = self._client.post("/workflows", json=body)
            refused = refused_fields(response, body)
            if not refused:
                break
            # The workflow runs as it would where this n8n imported it: without the field.
            for path in refused:
                where = body["settings"] if len(path) == 2 else body
                log.warning(
                    "n8n refused %s=%r of workflow %r (%s); deployed without it",
                    ".".join(path),
                    where.pop(path[-1]),
                    workflow.get("name"),
                    response.text[:200],
                )
        created = _check(response, f"create workflow {workflow.get('name')!r}")
        return str(created["id"])

    def publish(self, workflow_id: str) -> None:
        response = self._client.post(f"/workflows/{workflow_id}/publish")
        if response.status_code == 404:  # before the publish endpoint existed
            response = self._client.post(f"/workflows/{workflow_id}/activate")
        _check(response, f"publish workflow {workflow_id}")

    def delete_workflow(self, workflow_id: str) -> None:
        _check(self._client.delete(f"/workflows/{workflow_id}"), f"delete workflow {workflow_id}")

    # -- executions -------------------------------------------------------------------
    def executions(self, workflow_id: str | None = None, limit: int = 250) -> list[dict[str, Any]]:
        params: dict[str, str | int] = {"limit": limit}
        if workflow_id is not None:
            params["workflowId"] = workflow_id
        body = _check(self._client.get("/executions", params=params), "list executions")
        return list(body["data"])

    def execution(self, execution_id: str, include_data: bool = False) -> dict[str, Any]:
        params = {"includeData": "true" if include_data else "false"}
        return dict(
            _check(
                self._client.get(f"/executions/{execution_id}", params=params),
                f"read execution {execution_id}",
            )
        )

    def node_failure(self, execution_id: str) -> NodeFailure | None:
        """The node a failed execution stopped at and its error message (None: it did not
        fail), from the execution's data."""
        return node_failure(self.execution(execution_id, include_data=True))

    def retry_execution(self, execution_id: str, load_workflow: bool = False) -> dict[str, Any]:
        """The operator's "retry" of a failed or crashed execution (a new execution). n8n
        answers once the retried execution has finished, so the call waits as long as a run
        may take (RETRY_ANSWER_S), not the API's usual 30 s: under load a run took longer."""
        return dict(
            _check(
                self._client.post(
                    f"/executions/{execution_id}/retry",
                    json={"loadWorkflow": load_workflow},
                    timeout=RETRY_ANSWER_S,
                ),
                f"retry execution {execution_id}",
            )
        )


# How long the retry endpoint may take to answer: n8n awaits the retried execution's end.
RETRY_ANSWER_S = 120.0
_PREFLIGHT = {"Origin": "http://127.0.0.1", "Access-Control-Request-Method": "POST"}


def wait_webhook_live(webhook_url: str, deadline_s: float = 60.0) -> float:
    """Poll a production webhook until it is registered (publication is async on 2.40+).

    The probe is a CORS preflight (OPTIONS with an Origin): n8n looks the path up in its
    webhook registry without running the workflow, and answers 404 while the path is not
    registered. (Without an Origin header n8n answers every OPTIONS with 204.) No delivery
    is sent.
    """
    started = time.monotonic()
    while True:
        try:
            status = httpx.options(webhook_url, headers=_PREFLIGHT, timeout=10).status_code
        except httpx.TransportError:
            status = 0
        if status not in (0, 404):
            return time.monotonic() - started
        if time.monotonic() - started > deadline_s:
            raise SetupError(
                f"webhook {webhook_url} is not registered {deadline_s:.0f} s after publishing: "
                "n8n did not pick the workflow up; check the main log in the run directory"
            )
        time.sleep(0.25)
