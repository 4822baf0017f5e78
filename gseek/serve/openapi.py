"""The OpenAPI 3.1 schema of ``gseek serve``'s API, published at ``/openapi.json`` (written by hand)."""

from __future__ import annotations

from typing import Any

from gseek import __version__

from .options import BLAST_TASKS

__all__ = ["OPENAPI"]

_ERROR = {"description": "refused", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_REFUSALS = {"400": _ERROR, "401": _ERROR, "404": _ERROR, "408": _ERROR, "413": _ERROR, "429": _ERROR, "503": _ERROR,
             "504": _ERROR}
_REQUEST = {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Search"}}}}
_JOB = {"description": "the job", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Job"}}}}
_JOB_ID = [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}]

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "gseek serve", "version": __version__,
             "description": "A resident gseek search service: BLAST-style search (megablast, blastn, blastn-short, "
                            "dc-megablast) and k-mismatch read mapping against databases loaded once; concurrent "
                            "requests are batched into one scan. Every output is the bytes the local `gseek search` "
                            "writes (docs/serve.md)."},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": {"type": "object", "required": ["error", "kind", "status"], "properties": {
                "error": {"type": "string", "description": "one line, as the CLI prints it"},
                "kind": {"type": "string", "enum": ["usage", "input", "limit", "auth", "busy", "timeout", "resources",
                                                    "internal"]},
                "status": {"type": "integer"}}},
            "QueryFile": {"type": "object", "required": ["text"], "properties": {
                "name": {"type": "string", "description": "the file's name, used in error messages only"},
                "text": {"type": "string", "description": "FASTA or FASTQ text"}}},
            "Search": {"type": "object", "required": ["database", "queries"], "additionalProperties": False,
                       "properties": {
                           "database": {"type": "string", "description": "a configured database name"},
                           "task": {"type": "string", "enum": [*BLAST_TASKS, "map"], "default": "megablast"},
                           "queries": {"oneOf": [{"type": "string"},
                                                 {"type": "array", "items": {"$ref": "#/components/schemas/QueryFile"}}]},
                           "options": {"type": "object", "description": (
                               "the BLAST tasks: BlastOptions fields (evalue, word_size, reward, penalty, gap_open, "
                               "gap_extend, dust [level, window, linker] or null, soft_masking, lcase_masking, strand, "
                               "max_target_seqs, max_hsps, perc_identity, qcov_hsp_perc, xdrop_ungap, xdrop_gap, "
                               "xdrop_gap_final, ungapped; dc-megablast also template_type coding, optimal or "
                               "coding_and_optimal, template_length 16, 18 or 21 and window_size); map: the fields "
                               "of MapOptions (mismatches, max_alignments, report_all, max_hits, norc, nofw, "
                               "xa_limit, min_piece), ReadOptions (phred64, trim5, trim3, skip, upto) and "
                               "SamOptions' no_unal, cigar_eq")},
                           "format": {"type": "string", "description": "6 or 7 (with BLAST+ field keywords), sam, "
                                                                      "json, hits (gseek.Client's BlastHits, .npz); "
                                                                      "map: sam", "default": "6"},
                           "command": {"type": "string", "description": "SAM @PG CL"}}},
            "Job": {"type": "object", "properties": {
                "id": {"type": "string"}, "status": {"type": "string",
                                                     "enum": ["running", "done", "failed", "cancelled"]},
                "database": {"type": "string"}, "task": {"type": "string"}, "queries": {"type": "integer"},
                "bases": {"type": "integer"}, "created": {"type": "number"}, "finished": {"type": ["number", "null"]},
                "bytes": {"type": "integer"}, "result": {"type": "string"},
                "error": {"$ref": "#/components/schemas/Error"}}},
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/healthz": {"get": {"summary": "liveness and counters", "security": [],
                             "responses": {"200": {"description": "ok"}}}},
        "/api/v1/databases": {"get": {"summary": "the configured databases",
                                      "responses": {"200": {"description": "name, sequences, bases, tasks"},
                                                    "401": _ERROR}}},
        "/api/v1/search": {"post": {
            "summary": "search and wait for the result", "requestBody": _REQUEST,
            "responses": {"200": {"description": "the output bytes (text/plain; application/json for format json)"},
                          **_REFUSALS}}},
        "/api/v1/jobs": {"post": {"summary": "start a search in the background", "requestBody": _REQUEST,
                                  "responses": {"202": _JOB, **_REFUSALS}}},
        "/api/v1/jobs/{job_id}": {
            "get": {"summary": "a job's status", "parameters": _JOB_ID, "responses": {"200": _JOB, "404": _ERROR}},
            "delete": {"summary": "cancel a job, or forget a finished one", "parameters": _JOB_ID,
                       "responses": {"200": {"description": "cancelled or deleted"}, "404": _ERROR}}},
        "/api/v1/jobs/{job_id}/result": {"get": {
            "summary": "a finished job's output bytes", "parameters": _JOB_ID,
            "responses": {"200": {"description": "as /api/v1/search"}, "404": _ERROR, "409": _ERROR}}},
    },
}
