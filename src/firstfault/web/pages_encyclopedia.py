"""Encyclopedia pages: the index by category with search, one page per entry, comparisons."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from ..errors import UnknownEntryError, UsageError
from ..kb.compare import compare, comparison_topics
from ..render.entry_sections import build_sections, entry_header
from .app import render, search_index
from .limits import InputRejected

router = APIRouter(include_in_schema=False)
MAX_QUERY = 4000


@router.get("/entries")
def entries_index(request: Request, q: str = ""):
    kb = request.app.state.kb
    query = q.strip()[:MAX_QUERY]
    hits = search_index(request.app).search(query, limit=25) if query else None
    groups = [(category, kb.in_category(category)) for category in kb.categories()]
    return render(request, "entries.html", page="entries", query=query, hits=hits, groups=groups,
                  topics=[topic for topic in comparison_topics() if _comparable(kb, topic)])


@router.get("/entries/{entry_id}")
def entry_page(request: Request, entry_id: str):
    kb = request.app.state.kb
    try:
        entry = kb.get(entry_id)
    except UnknownEntryError as exc:
        raise InputRejected(404, "unknown_entry", exc.message, "search the encyclopedia for the message you saw") from None
    if entry.id != entry_id:
        return RedirectResponse(f"/entries/{entry.id}", status_code=301)
    titles = {item.id: item.title for item in kb.entries}
    return render(request, "entry.html", page="entries", entry=entry, header=entry_header(entry),
                  sections=build_sections(entry, None, titles), titles=titles)


@router.get("/compare")
def compare_topics(request: Request):
    return RedirectResponse("/compare/nccl", status_code=302)


@router.get("/compare/{topic}")
def compare_page(request: Request, topic: str):
    kb = request.app.state.kb
    try:
        comparison = compare(kb, topic)
    except UsageError as exc:
        raise InputRejected(404, "nothing_to_compare", exc.message, exc.hint) from None
    topics = [name for name in comparison_topics() if _comparable(kb, name)]
    return render(request, "compare.html", page="entries", comparison=comparison, topics=topics)


def _comparable(kb, topic: str) -> bool:
    try:
        compare(kb, topic)
    except UsageError:
        return False
    return True
