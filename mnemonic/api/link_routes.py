"""``POST /api/v1/associations``: link two memories by hand (``app/links.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.routes import parse
from mnemonic.app.links import LinkService
from mnemonic.store.models import Relation

ManualRelation = Literal["related", "caused_by", "part_of", "similar", "reinforces", "contradicts"]


class LinkBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_id: Annotated[str, Field(min_length=1, max_length=64)]
    target_id: Annotated[str, Field(min_length=1, max_length=64)]
    relation: ManualRelation = "related"
    strength: Annotated[float, Field(strict=True, gt=0, le=1, allow_inf_nan=False)] = 0.7


class LinkAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_id: str
    target_id: str
    relation: str
    strength: float
    created: bool = Field(description="False when the pair already had this relation.")


def build_link_routes(links: LinkService) -> list[Route]:
    async def add(request: Request) -> Response:
        body = await parse(request, LinkBody)
        done = await links.link(
            body.source_id, body.target_id, Relation(body.relation), body.strength
        )
        return JSONResponse(
            {
                "source_id": done.source_id,
                "target_id": done.target_id,
                "relation": done.relation,
                "strength": done.strength,
                "created": done.created,
            },
            status_code=201 if done.created else 200,
        )

    return [Route("/api/v1/associations", add, methods=["POST"])]
