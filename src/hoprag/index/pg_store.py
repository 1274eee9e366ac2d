"""An index kept in PostgreSQL: BM25 and pgvector retrieval in SQL, filters and clearance as ``WHERE``.

Lexical ranking is BM25 with Lucene's formulas (the local index's bm25s ``method="lucene"``),
computed in SQL at query time from the statistics the build stored::

    score(c) = sum over query terms t in c of  qtf(t) * idf(t) * tf(t, c) / (tf(t, c) + k1 * (1 - b + b * |c| / avgdl))
    idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

over the ``postings`` of the query's terms (tokenised in Python by the same tokenizer), so it ranks
like the local index up to float rounding (bm25s sums float32, PostgreSQL float8; only near-ties
can swap). Each term's part is rounded to a multiple of 2^-36 before the sum, so a score does not
depend on the order its rows arrive in, and an updated index scores as its rebuild, bit for bit. Dense retrieval orders by pgvector's inner product (``<#>``) on unit vectors, i.e. cosine
similarity: ``backend="hnsw"`` (default) through the HNSW index with iterative scans, so filters do
not leave it short, and an exact scan otherwise or whenever the HNSW scan returns fewer than ``k``.

Filters, exclusions and the caller's clearance are ``WHERE`` clauses of the ranking query itself,
applied before ``LIMIT k``: a caller gets ``k`` allowed hits whenever ``k`` exist, and a chunk above
its clearance is never a candidate. Ties are broken by chunk order, as in the local index.

An index changed while open (``hoprag index --out postgresql://… --update``, or a rebuild) is noticed
by the next ranking query, which reads the index's artifact id in its own snapshot: the open index
then reads its manifest and counts again and forgets the rows it had cached (:meth:`PgIndex.refresh`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import Any

import numpy as np
from pydantic import ValidationError

from hoprag.security.acl import Clearance
from hoprag.security.clearance import resolve_clearance
from hoprag.errors import ConfigError, IndexLoadError
from hoprag.index.base import Filters, Retriever
from hoprag.index.contract import Index, IndexStats
from hoprag.index.filters import FILTER_FIELDS
from hoprag.index.hybrid import HybridRetriever
from hoprag.index.pg_corpus import PgChunks, PgCorpus, PgDocuments
from hoprag.index.pg_schema import PG_FORMAT, READ_FORMATS, Connections, PgTarget, parse_target, quote
from hoprag.index.store import DENSE_FIX, MODES, DenseInfo, IndexManifest, config_hash
from hoprag.records import Chunk, Hit

__all__ = ["PG_BACKENDS", "PgBM25Retriever", "PgDenseRetriever", "PgIndex", "open_pg_index", "where_clause"]

PG_BACKENDS = ("hnsw", "exact")
_SCALARS = (str, int, float, bool)
#: documents up to this many characters of JSON come along with their hits (longer ones are read when asked for)
SMALL_DOCUMENT = 8192
# a hit's columns, then the rest of its chunk (text, index, acl level) and a small document, for the
# corpus's cache: the engine and rendering read them next
_HIT_COLUMNS = ('c.pos, c.id, c.doc_id, c.start, c."end", d.title, c.text, c.index, d.acl_level, '
                f"CASE WHEN d.size <= {SMALL_DOCUMENT} THEN d.body::text END")
_QUERY_CACHE = 2048
FIXED = 2**36  # BM25 term parts are summed as whole multiples of 1/FIXED (see PgBM25Retriever)
#: the index's artifact id, read in each ranking query's own snapshot: an open index that meets a new one
#: (an update or a rebuild committed since it was read) reads its counts again and forgets its cached rows
_ARTIFACT = "(SELECT body->>'artifact_id' FROM {s}.manifest WHERE id = 1)"


def where_clause(filters: Filters | None, exclude: Collection[str], clearance: Clearance | None) -> tuple[str, list[Any]]:
    """SQL over ``c`` (chunks) and ``d`` (documents) keeping what may be returned, with its parameters.

    Same semantics as the local index: a filter value compares as ``str(value)``, a list means any
    of its values, several fields must all match; unknown fields and non-scalar values are a
    :class:`ConfigError`. A clearance keeps documents whose level ranks at or below it (unlabelled
    documents count as the policy's ``unlabelled`` level, unknown classes as the highest).
    """
    parts: list[str] = []
    params: list[Any] = []
    for field, wanted in (filters or {}).items():
        if not (field in FILTER_FIELDS or (field.startswith("metadata.") and len(field) > len("metadata."))):
            raise ConfigError(f"unknown filter field '{field}'; valid: {', '.join(FILTER_FIELDS)} or 'metadata.<key>'")
        values = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
        for value in values:
            if not isinstance(value, _SCALARS):
                raise ConfigError(
                    f"filter '{field}' value {value!r} is not a string or number; use a value or a list of values"
                )
        parts.append("jsonb_exists_any(d.fkeys -> %s, %s::text[])")
        params += [field, [str(v) for v in values]]
    if clearance is not None:
        policy = clearance.policy
        allowed = list(policy.allowed_classes(clearance.level))
        if clearance.level != policy.highest:  # at the top level every class, known or not, is visible
            if policy.unlabelled in allowed:
                allowed.append("")
            parts.append("d.acl_level = ANY(%s::text[])")
            params.append(allowed)
    if exclude:
        parts.append("NOT (c.id = ANY(%s::text[]))")
        params.append(list(exclude))
    return (" AND ".join(parts) if parts else "TRUE"), params


def _hits(rows: list[tuple[Any, ...]], retriever: str, index: PgIndex) -> list[Hit]:
    """The hits of ranked rows (hit columns, score, artifact id); their chunks are kept, as the engine
    and rendering read them next."""
    if rows and rows[0][-1] != index.manifest.artifact_id:
        index.refresh()
    rows = [row[:-1] for row in rows]
    corpus = index.corpus
    corpus.remember_chunks((Chunk(cid, did, text, start, end, index), level)
                           for _pos, cid, did, start, end, _title, text, index, level, _body, _score in rows)
    corpus.remember_documents((did, body, level) for _pos, _cid, did, *_hit, level, body, _score in rows)
    return [Hit(cid, did, float(score), rank, retriever, start, end, title)
            for rank, (_pos, cid, did, start, end, title, *_chunk, score) in enumerate(rows, start=1)]


class PgBM25Retriever:
    """BM25 (Lucene) ranked inside PostgreSQL from the stored term statistics."""

    name = "bm25"

    def __init__(self, index: PgIndex) -> None:
        self.index = index
        self.tokenizer = index.manifest.config.tokenizer()
        params = index.manifest.config.bm25
        self.k1, self.b = params.k1, params.b
        s = quote(index.target.schema)
        score = (
            f"SELECT {_HIT_COLUMNS}, s.score, {_ARTIFACT.format(s=s)} FROM ("
            # avgdl from the manifest in the query's own snapshot: an update changes it with the postings.
            # Each term's part is rounded to a multiple of 2^-36 (FIXED) so the sum is exact in float8 and
            # does not depend on the order rows arrive in, which follows how they lie on disk: an updated
            # index scores as its rebuild, bit for bit (for scores below 2^17; a part moves by < 1e-11)
            f" SELECT p.chunk_pos, sum(round(q.qtf * q.idf * p.tf / (p.tf + %s * (1 - %s + %s * p.length /"
            f" (SELECT avgdl FROM {s}.manifest WHERE id = 1))) * {FIXED})) / {FIXED} AS score"
            f" FROM (SELECT t.id, t.idf, x.qtf FROM unnest(%s::text[], %s::int[]) AS x(term, qtf)"
            f"       JOIN {s}.terms t ON t.term = x.term) q"
            f" JOIN {s}.postings p ON p.term_id = q.id"
            "{join} GROUP BY p.chunk_pos ORDER BY score DESC, p.chunk_pos LIMIT %s) s"
            f" JOIN {s}.chunks c ON c.pos = s.chunk_pos JOIN {s}.documents d ON d.pos = c.doc_pos"
            " ORDER BY s.score DESC, c.pos"
        )
        # without filters, exclusions or a clearance the postings alone are scored
        self._open_sql = score.replace("{join}", "")
        self._sql = score.replace(
            "{join}", f" JOIN {s}.chunks c ON c.pos = p.chunk_pos JOIN {s}.documents d ON d.pos = c.doc_pos WHERE {{where}}"
        )

    def retrieve(
        self,
        query: str,
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[Hit]:
        cleared = resolve_clearance(clearance)
        where, params = where_clause(filters, exclude, cleared)
        if k <= 0:
            return []
        tokens = self.tokenizer.query(query)
        if not tokens:
            return []
        qtf: dict[str, int] = {}
        for token in tokens:
            qtf[token] = qtf.get(token, 0) + 1
        args = [self.k1, self.b, self.b, list(qtf), list(qtf.values()), *params, k]
        with self.index.pool.borrow() as conn:
            sql = self._open_sql if not params else self._sql.replace("{where}", where)
            rows = conn.execute(sql, args).fetchall()
        return _hits(rows, self.name, self.index)

    def retrieve_many(self, queries: Iterable[str], k: int = 10, **options: Any) -> list[list[Hit]]:
        """``retrieve`` for each query, same filters, exclusions and clearance."""
        return [self.retrieve(q, k, **options) for q in queries]


class PgDenseRetriever:
    """Cosine search over the pgvector ``embedding`` column (HNSW, or an exact scan)."""

    name = "dense"

    def __init__(self, index: PgIndex, embedder: Any, *, min_score: float | None = None, backend: str = "hnsw") -> None:
        if backend not in PG_BACKENDS:
            raise ConfigError(f"unknown dense backend '{backend}' for a PostgreSQL index; valid: {', '.join(PG_BACKENDS)}")
        if min_score is not None and not -1.0 <= min_score <= 1.0:
            raise ConfigError(f"min_score {min_score} is not a cosine similarity; give a value in [-1, 1]")
        self.index = index
        self.embedder = embedder
        self.min_score = min_score
        self.backend = backend
        s = quote(index.target.schema)
        base = (f"SELECT c.pos, -(c.embedding <#> %s::vector) AS score FROM {s}.chunks c "
                f"JOIN {s}.documents d ON d.pos = c.doc_pos WHERE {{where}}")
        # the k best positions first, then their rows: the hit columns are read for k chunks, not for
        # every chunk an exact scan sorts
        rows = (f"SELECT {_HIT_COLUMNS}, s.score, {_ARTIFACT.format(s=s)} FROM ({{ranked}}) s JOIN {s}.chunks c ON c.pos = s.pos "
                f"JOIN {s}.documents d ON d.pos = c.doc_pos ORDER BY s.score DESC, c.pos")
        # ordering by the bare distance lets the planner walk the HNSW index; ordering by the negated
        # score and the chunk position cannot use it, so that query is an exact scan
        self._hnsw_sql = rows.replace("{ranked}", base + " ORDER BY c.embedding <#> %s::vector LIMIT %s")
        self._exact_sql = rows.replace("{ranked}", base + " ORDER BY score DESC, c.pos LIMIT %s")
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def query_vector(self, query: str) -> np.ndarray:
        """The unit vector of ``query`` (cached: multi-hop engines re-issue queries)."""
        with self._lock:
            cached = self._cache.get(query)
            if cached is not None:
                self._cache.move_to_end(query)
                return cached
        vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        with self._lock:
            self._cache[query] = vector
            if len(self._cache) > _QUERY_CACHE:
                self._cache.popitem(last=False)
        return vector

    def retrieve(
        self,
        query: str,
        k: int = 10,
        *,
        filters: Filters | None = None,
        exclude: Collection[str] = (),
        clearance: str | Clearance | None = None,
    ) -> list[Hit]:
        cleared = resolve_clearance(clearance)
        where, params = where_clause(filters, exclude, cleared)
        if k <= 0 or not query.strip():
            return []
        qv = self.query_vector(query)
        if not qv.any():  # no token the embedder knows: nothing to compare with
            return []
        literal = "[" + ",".join(repr(float(x)) for x in qv) + "]"
        if self.min_score is not None:
            where += " AND -(c.embedding <#> %s::vector) >= %s"
            params = [*params, literal, self.min_score]
        with self.index.pool.borrow() as conn:
            if self.backend == "hnsw":
                with conn.transaction():
                    # iterative scans keep walking the graph until k rows pass the WHERE clause
                    conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
                    conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(100, 2 * k))}")
                    rows = conn.execute(self._hnsw_sql.replace("{where}", where), [literal, *params, literal, k]).fetchall()
                if len(rows) == k:
                    rows.sort(key=lambda r: (-r[-2], r[0]))
                    return _hits(rows, self.name, self.index)
            rows = conn.execute(self._exact_sql.replace("{where}", where), [literal, *params, k]).fetchall()
        return _hits(rows, self.name, self.index)

    def retrieve_many(self, queries: Iterable[str], k: int = 10, **options: Any) -> list[list[Hit]]:
        """``retrieve`` for each query, same filters, exclusions and clearance."""
        return [self.retrieve(q, k, **options) for q in queries]


class PgIndex(Index):
    """An index read from PostgreSQL (:class:`~hoprag.index.contract.Index`, as the local index).

    ``documents`` and ``chunks`` are read-only mappings that look rows up when asked for
    (:mod:`hoprag.index.pg_corpus`); neither retrieval nor the engine loads the corpus.
    """

    def __init__(self, target: PgTarget, pool: Connections, manifest: IndexManifest, avgdl: float,
                 level_counts: dict[str, tuple[int, int]] | None = None) -> None:
        self.target = target
        self.pool = pool
        self.manifest = manifest
        self.avgdl = avgdl
        self.corpus = PgCorpus(pool, target.schema, documents=manifest.document_count, chunks=manifest.chunk_count,
                               level_counts=level_counts or {}, tokenizer=manifest.config.tokenizer())
        self.documents = PgDocuments(self.corpus)
        self.chunks = PgChunks(self.corpus)
        self.bm25 = PgBM25Retriever(self)
        self._dense: PgDenseRetriever | None = None

    @property
    def location(self) -> str:
        return self.target.display  # the URL without its password

    @property
    def has_dense(self) -> bool:
        return self.manifest.dense is not None

    def entity_graph(self) -> None:
        """``None``: a PostgreSQL index keeps no entity graph (:mod:`hoprag.index.pg_build`)."""
        return None

    def stats(self) -> IndexStats:
        m = self.manifest
        return IndexStats(store="postgres", location=self.location, artifact_id=m.artifact_id,
                          documents=m.document_count, chunks=m.chunk_count, dense=self.has_dense, graph=False)

    def dense(self, *, min_score: float | None = None, backend: str | None = "hnsw", mode: str = "dense") -> PgDenseRetriever:
        """The dense retriever over the stored vectors (``backend``: ``hnsw``, the default when
        ``None``, or ``exact``); :class:`IndexLoadError` if there are none."""
        backend = backend or "hnsw"
        info = self.manifest.dense
        if info is None:
            raise IndexLoadError(
                f"{self.location}: retrieval mode '{mode}' is not available in this index (valid: bm25); "
                f"it was built without dense vectors. Fix: rebuild it with `hoprag index CORPUS --out URL --dense`"
            )
        if self._dense is not None and self._dense.min_score == min_score and self._dense.backend == backend:
            return self._dense
        embedder = self._dense.embedder if self._dense is not None else _embedder(info, self.location)
        retriever = PgDenseRetriever(self, embedder, min_score=min_score, backend=backend)
        if min_score is None and backend == "hnsw":
            self._dense = retriever
        return retriever

    def retriever(self, mode: str = "bm25", *, fusion: str = "rrf", **options: Any) -> Retriever:
        """The retriever for ``mode`` (``bm25``, ``dense`` or ``hybrid``), as :meth:`LoadedIndex.retriever`."""
        if mode == "bm25":
            return self.bm25
        if mode == "dense":
            return self.dense(**options)
        if mode == "hybrid":
            return HybridRetriever(self.bm25, self.dense(mode=mode), fusion=fusion, **options)  # type: ignore[arg-type]
        raise ConfigError(f"unknown retrieval mode '{mode}'; valid: {', '.join(MODES)}")

    def refresh(self) -> None:
        """Read the manifest and the per-level counts again and forget the cached rows: the index
        changed since it was opened (an update or a rebuild committed)."""
        s = quote(self.target.schema)
        with self.pool.borrow() as conn:
            body, avgdl = conn.execute(f"SELECT body, avgdl FROM {s}.manifest WHERE id = 1").fetchone()
            levels = conn.execute(f"SELECT acl_level, documents, chunks FROM {s}.acl_levels").fetchall()
        self.manifest, self.avgdl = IndexManifest.model_validate(body), float(avgdl)
        self.corpus.reset(documents=self.manifest.document_count, chunks=self.manifest.chunk_count,
                          level_counts={level: (d, c) for level, d, c in levels})

    def close(self) -> None:
        self.pool.close()


def _embedder(info: DenseInfo, where: str) -> Any:
    from hoprag.index.embedders import make_embedder

    embedder = make_embedder(info.embedder)
    found = embedder.info()
    if found.get("weights_sha256") != info.weights_sha256 or embedder.dim != info.dim:
        raise IndexLoadError(
            f"{where}: the vectors were made by {info.model_id} ({info.dim} dims) but the installed "
            f"'{info.embedder}' model differs; query and corpus vectors would not be comparable. Fix: {DENSE_FIX}"
        )
    return embedder


def open_pg_index(url: str) -> PgIndex:
    """Connect to the index ``url`` (``postgresql://…?index=NAME``) and read its manifest."""
    target = parse_target(url)
    pool = Connections(target)
    fix = f"build it with `hoprag index CORPUS --out {target.display}`"
    with pool.borrow() as conn:
        found = conn.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'manifest'",
                             (target.schema,)).fetchone()
        if found is None:
            pool.close()
            raise IndexLoadError(f"{target.display}: no index named '{target.name}' in this database. Fix: {fix}")
        row = conn.execute(f"SELECT format, body, avgdl FROM {quote(target.schema)}.manifest WHERE id = 1").fetchone()
        if row is not None and row[0] in READ_FORMATS:
            levels = conn.execute(f"SELECT acl_level, documents, chunks FROM {quote(target.schema)}.acl_levels").fetchall()
    if row is None or row[0] not in READ_FORMATS:
        pool.close()
        raise IndexLoadError(f"{target.display}: index layout {row[0] if row else 'unknown'}, this hoprag reads "
                             f"{READ_FORMATS[0]} to {PG_FORMAT}. Fix: rebuild it from its corpus with "
                             f"`hoprag index CORPUS --out {target.display}`")
    _, body, avgdl = row
    try:
        manifest = IndexManifest.model_validate(body)
    except ValidationError as exc:
        pool.close()
        from hoprag.validation_messages import describe

        raise IndexLoadError(f"{target.display}: unreadable manifest ({describe(exc, what='manifest')[0]}). "
                             f"Fix: {fix}") from None
    if config_hash(manifest.config) != manifest.config_hash:
        pool.close()
        raise IndexLoadError(f"{target.display}: the index was written by an incompatible hoprag. Fix: {fix}")
    return PgIndex(target, pool, manifest, float(avgdl), {lvl: (d, c) for lvl, d, c in levels})
