"""The session briefing over MCP (issue 17, item 3): the prompt `context` and the resource
`cortex://context` give the same Markdown as `cortex context`, through the official client."""

from conftest import connect, run


def test_the_briefing_is_a_prompt_and_a_resource(db):
    async def body():
        async with connect(db) as c:
            stored = await c.store(
                {"kind": "decision", "data": {"title": "Sessions in Postgres", "component": "auth",
                                              "status": "accepted", "rationale": "one store"}},
                {"kind": "todo", "data": {"title": "Rotate gateway keys", "status": "open"}},
            )
            ids = [r["id"] for r in stored["results"]]
            prompts = (await c.session.list_prompts()).prompts
            assert [p.name for p in prompts] == ["context"]
            prompt = await c.session.get_prompt("context")
            text = prompt.messages[0].content.text
            assert text.startswith("# Project memory: acme/api @ main"), text
            assert all(i in text for i in ids), text
            resources = (await c.session.list_resources()).resources
            assert [str(r.uri) for r in resources] == ["cortex://context"]
            read = await c.session.read_resource("cortex://context")
            assert read.contents[0].text == text
            assert read.contents[0].mime_type == "text/markdown"
    run(body)
