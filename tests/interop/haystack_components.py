"""The two Haystack components of the test pipeline that Haystack does not ship: module-level
classes, since the instrumentor wraps a component's ``run`` through its module path."""

from __future__ import annotations

from haystack import Document, component


@component
class SecondHopQuery:
    """The title of the first hop's best document."""

    @component.output_types(query=str)
    def run(self, question: str, documents: list[Document]) -> dict[str, str]:
        title = documents[0].meta.get("title", "") if documents else ""
        return {"query": title or question}


@component
class TitleAnswerGenerator:
    """Replies with the title of the best second-hop document (a stand-in for an LLM given ``prompt``)."""

    @component.output_types(replies=list[str])
    def run(self, prompt: str, documents: list[Document]) -> dict[str, list[str]]:
        return {"replies": [documents[0].meta.get("title", "") if documents else ""]}
