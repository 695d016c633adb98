"""n8n's own service nodes, unmodified, against the record fake's personalities: a "look it up,
create it only if it is not there" export (Notion, Airtable, Pipedrive, Supabase, Google Sheets;
SendGrid's and HubSpot's upserts by email; Mailchimp's add, whose second one Mailchimp refuses)
runs twice with one business key, another order's record in the service first. The first
delivery's search finds nothing and the node creates the record (one commit); the second one's
search finds it and creates nothing. Zendesk's and HubSpot's searches see a record only once
their index has it. Slack's and Twilio's nodes send one message: one commit, and the node runs
on the answer. So the personality's answers have the shape the built-in node reads (its search
filter, its paging, its output fields)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from harness.stack.stack import Stack
from tests.support.exports import deployed, trigger

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "name",
    [
        "notion_find_or_create_page",
        "airtable_find_or_create_record",
        "pipedrive_find_or_create_deal",
    ],
)
def test_the_node_finds_the_record_it_created(n8n_stack: Stack, name: str) -> None:
    key, created, found = _found_after_creating(n8n_stack, name)
    # Both answers name the same record, with the key read back out of the node's output.
    assert created.json() == found.json(), (created.text, found.text)
    assert created.json()["order_id"] == key and created.json()["id"], created.text


@pytest.mark.parametrize("name", ["zendesk_find_or_create_ticket", "hubspot_find_or_create_deal"])
def test_a_search_does_not_see_a_record_it_has_not_indexed_yet(n8n_stack: Stack, name: str) -> None:
    """The node's search (Zendesk's type:ticket external_id:<key>, HubSpot's deals search by
    dealname) right after the record was created finds nothing, as the service's index lags
    (Zendesk: up to a few minutes; HubSpot: eventually consistent): the second delivery
    creates a second record. A search is no guard against a quick redelivery. Once the index
    has caught up (as a day later), the node's search finds them and creates nothing."""
    wut, deployment = deployed(n8n_stack, name)
    key = f"it-{uuid.uuid4().hex[:10]}"
    control = n8n_stack.require_provider().control

    def deliver() -> None:
        answer = trigger(wut, deployment, key, f"evt-{uuid.uuid4().hex[:8]}")
        assert answer.status_code == 200, answer.text
        assert answer.json()["order_id"] == key, answer.text

    for _ in range(2):
        deliver()
    made = control.commits(reference=key)
    assert len(made) == 2 and len({c.effect for c in made}) == 1, made  # two of one kind
    control.catch_up_index()
    deliver()
    assert len(control.commits(reference=key)) == 2  # the search found them: no third


def test_a_sendgrid_contact_is_found_once_its_upsert_job_has_run(n8n_stack: Stack) -> None:
    """The SendGrid node upserts the contact <key>@example.com, then gets it by email. SendGrid
    queues an upsert, so the get right after it finds no contact: the node outputs no item,
    Respond to Webhook is not reached, and n8n answers 200 with an empty body. Once the job has run
    (the index caught up), a second delivery's upsert is the same contact (no second commit)
    and its get reads it."""
    wut, deployment = deployed(n8n_stack, "sendgrid_upsert_contact")
    key = f"it-{uuid.uuid4().hex[:10]}"
    control = n8n_stack.require_provider().control
    first = trigger(wut, deployment, key, f"evt-{uuid.uuid4().hex[:8]}")
    assert (first.status_code, first.text) == (200, ""), first.text
    control.catch_up_index()
    found = trigger(wut, deployment, key, f"evt-{uuid.uuid4().hex[:8]}")
    assert found.status_code == 200, found.text
    assert found.json()["order_id"] == key and found.json()["id"], found.text
    assert [c.effect for c in control.commits(reference=key)] == ["contacts"]


def test_the_hubspot_contact_upsert_by_email_is_one_contact(n8n_stack: Stack) -> None:
    """The HubSpot node's contact Create or Update (v1 createOrUpdate by email, then the
    contact's profile): the second delivery updates the same contact, which HubSpot answers
    with isNew false; one commit for both."""
    key, created, updated = _found_after_creating(n8n_stack, "hubspot_upsert_contact")
    first, second = created.json(), updated.json()
    assert (first["is_new"], second["is_new"]) == (True, False), (first, second)
    assert first["id"] == second["id"] and first["email"] == f"{key}@example.com", first


def test_a_second_mailchimp_add_of_the_email_is_member_exists(n8n_stack: Stack) -> None:
    """The Mailchimp node adds the member <key>@example.com (On Error: continue), then gets it
    by email: the second delivery's add is Mailchimp's 400 Member Exists, no second effect, and
    the get reads the one member."""
    key, created, found = _found_after_creating(n8n_stack, "mailchimp_add_member")
    assert created.json() == found.json(), (created.text, found.text)
    assert created.json()["order_id"] == key and created.json()["id"], created.text
    assert created.json()["email"] == f"{key}@example.com", created.text
    adds = n8n_stack.require_provider().control.attempts(reference=key)
    assert [a.http_status for a in adds] == [200, 400], adds


def test_the_supabase_node_finds_its_row_and_reads_its_patch(n8n_stack: Stack) -> None:
    """The Supabase node (v1): the first delivery's search (and=(order_id.eq.<key>)) finds
    nothing and creates the row; every later one finds it and PATCHes its status to seen,
    and the search after that PATCH reads seen. One commit for three deliveries."""
    wut, deployment = deployed(n8n_stack, "supabase_find_or_create_row")
    key = f"it-{uuid.uuid4().hex[:10]}"
    control = n8n_stack.require_provider().control
    # Another order's row is in the table first: the search must filter, not list the table.
    assert trigger(wut, deployment, f"{key}-other").status_code == 200
    answers = []
    for _ in range(3):
        response = trigger(wut, deployment, key, f"evt-{uuid.uuid4().hex[:8]}")
        assert response.status_code == 200, response.text
        answers.append(response.json())
    assert len(control.commits(reference=key)) == 1
    created, found, found_again = answers
    assert created["order_id"] == key and created["id"], created
    assert {a["id"] for a in answers} == {created["id"]}
    assert (created["status"], created.get("status_read")) == ("new", None)
    assert (found["status"], found["status_read"]) == ("seen", "new")
    assert (found_again["status"], found_again["status_read"]) == ("seen", "seen")


@pytest.mark.parametrize(
    ("name", "answer_field"),
    [("slack_order_message", "ts"), ("twilio_order_sms", "sid")],
)
def test_the_node_runs_on_the_answer_to_its_one_message(
    n8n_stack: Stack, name: str, answer_field: str
) -> None:
    """Slack's and Twilio's nodes send one message and read the personality's answer (the
    Slack node renames `ts` to `message_timestamp`; Twilio's returns the Message resource)."""
    wut, deployment = deployed(n8n_stack, name)
    key = f"it-{uuid.uuid4().hex[:10]}"
    response = trigger(wut, deployment, key)
    assert response.status_code == 200, response.text
    commits = n8n_stack.require_provider().control.commits(reference=key)
    assert [c.effect for c in commits] == ["record"], commits
    assert response.json()["order_id"] == key and response.json()[answer_field], response.text


@pytest.mark.parametrize("name", ["sheets_find_or_append_row", "sheets_default_append_row"])
def test_the_sheets_node_reads_the_row_it_appended(n8n_stack: Stack, name: str) -> None:
    """The Google Sheets node (v4.5): its read (a lookup on the Order ID column) finds no row,
    so it appends one (with Minimise API Calls by values:append, by default as a grid row added
    and a PUT into it; the first delivery on the empty sheet writes the header row first); the
    second delivery's read finds that row. One commit for two deliveries."""
    key, appended, found = _found_after_creating(n8n_stack, name)
    assert appended.json() == {"order_id": key, "email": "buyer@example.com"}, appended.text
    assert found.json()["order_id"] == key and found.json()["row_number"] > 2, found.text


def _found_after_creating(stack: Stack, name: str) -> tuple[str, httpx.Response, httpx.Response]:
    """Another order's record first (so a search that does not filter fails), then two
    deliveries of one fresh key: the first creates the record (one commit), the second's
    search finds it (no second commit). Returns the key and both answers."""
    wut, deployment = deployed(stack, name)
    key = f"it-{uuid.uuid4().hex[:10]}"
    control = stack.require_provider().control
    assert trigger(wut, deployment, f"{key}-other").status_code == 200
    created = trigger(wut, deployment, key, f"evt-{uuid.uuid4().hex[:8]}")
    assert created.status_code == 200, created.text
    assert len(control.commits(reference=key)) == 1
    found = trigger(wut, deployment, key, f"evt-{uuid.uuid4().hex[:8]}")
    assert found.status_code == 200, found.text
    assert len(control.commits(reference=key)) == 1  # the search found it: no second create
    return key, created, found
