"""The failing node and its message, read from an execution as the public API returns it."""

from __future__ import annotations

from typing import Any

import httpx
import respx

from harness.stack.execution_failure import NodeFailure, node_failure
from harness.stack.n8n_api import N8nApi

FAILED: dict[str, Any] = {
    "id": "41",
    "finished": False,
    "status": "error",
    "data": {
        "resultData": {
            "error": {
                "message": "Bad request - please check your parameters",
                "description": "No such customer: 'cus_123'",
                "node": {"name": "Create PaymentIntent", "type": "n8n-nodes-base.httpRequest"},
            },
            "lastNodeExecuted": "Create PaymentIntent",
            "runData": {
                "Webhook": [{"startTime": 1, "executionStatus": "success"}],
                "Create PaymentIntent": [
                    {
                        "startTime": 2,
                        "error": {"message": "Bad request - please check your parameters"},
                    }
                ],
            },
        }
    },
}


def test_the_failing_node_and_its_message() -> None:
    failure = node_failure(FAILED)
    assert failure == NodeFailure(
        "Create PaymentIntent",
        "Bad request - please check your parameters",
        "No such customer: 'cus_123'",
    )
    assert failure.line() == (
        "node 'Create PaymentIntent' failed: Bad request - please check your parameters "
        "(No such customer: 'cus_123')"
    )


def test_a_node_error_only_in_the_run_data_is_found() -> None:
    execution = {
        "status": "error",
        "data": {
            "resultData": {
                "runData": {
                    "First": [{"startTime": 5, "error": {"message": "early"}}],
                    "Later": [{"startTime": 9, "error": {"message": "ECONNREFUSED"}}],
                }
            }
        },
    }
    assert node_failure(execution) == NodeFailure("Later", "ECONNREFUSED")


def test_a_successful_execution_has_no_failure() -> None:
    # continueOnFail: a node's error the workflow went past is no failure of the execution.
    execution = {
        "status": "success",
        "data": {"resultData": {"runData": {"N": [{"error": {"message": "x"}}]}}},
    }
    assert node_failure(execution) is None


def test_a_crash_without_data_still_says_what_is_known() -> None:
    execution = {"status": "crashed", "data": {"resultData": {"lastNodeExecuted": "Charge"}}}
    assert node_failure(execution) == NodeFailure("Charge", "execution crashed")
    assert node_failure({"status": "crashed"}) == NodeFailure(None, "execution crashed")
    assert NodeFailure(None, "stalled").line() == "failed outside any node: stalled"


@respx.mock
def test_the_api_reads_the_execution_with_its_data() -> None:
    route = respx.get("http://127.0.0.1:9/api/v1/executions/41").mock(
        return_value=httpx.Response(200, json=FAILED)
    )
    api = N8nApi("http://127.0.0.1:9", "key")
    try:
        failure = api.node_failure("41")
    finally:
        api.close()
    assert failure is not None and failure.node == "Create PaymentIntent"
    assert route.calls.last.request.url.params["includeData"] == "true"


def test_an_html_error_page_in_the_message_reads_as_its_text() -> None:
    page = '502 - "<html>\n<head><title>Bad gateway</title></head>\n<body>no fake</body></html>"'
    line = NodeFailure("Charge", page).line()
    assert line == "node 'Charge' failed: 502 - \" Bad gateway no fake \""


def test_an_html_error_page_in_the_description_reads_as_its_text_too() -> None:
    page = "<html>\n<head>\n    <title>502 Bad Gateway</title>\n</head></html>"
    line = NodeFailure("Create", "Bad gateway - the service failed", page).line()
    assert line == "node 'Create' failed: Bad gateway - the service failed (502 Bad Gateway)"


def test_n8ns_misleading_words_get_a_gloss() -> None:
    crashed = NodeFailure("Respond", "Workflow did not finish, possible out-of-memory issue")
    assert crashed.line().endswith(
        "[n8n's recovery says this of every execution whose process "
        "ended mid-run: a kill, a lost Redis link, not only memory]"
    )
    plain = NodeFailure("Charge", "Bad request - please check your parameters")
    assert "[" not in plain.line()
