// A namespace of its own on the metadata server a URL names, for a run that must leave nothing
// behind (`folio fs bench --meta`): Redis gets a key prefix of its own (`?prefix=NAME`), PostgreSQL
// a schema of its own (created here, named by `options=-csearch_path%3DNAME`); SQLite a database
// file in a directory the caller removes. DropScratchNamespace removes what the run stored.
//
// Thread safety: plain functions; each opens its own connection.
#pragma once

#include <string>
#include <string_view>

#include "folio/status.h"

namespace folio::meta {

// The URL of a fresh, empty namespace `name` ([a-z0-9_], at most 48 characters) on the server
// `url` names ("sqlite" alone: `dir`/NAME.db). Errors: InvalidArgument naming the URL when it
// already names a prefix or schema (the run picks its own) or its scheme is not one of sqlite,
// redis://, postgres://; IOError when the server cannot be reached; NotSupported for
// postgres:// in a build without the engine.
Result<std::string> CreateScratchNamespace(std::string_view url, std::string_view name,
                                           std::string_view dir);

// Removes everything under a URL CreateScratchNamespace returned (nothing for SQLite: the
// caller removes its directory). Errors: IOError when the server cannot be reached.
Status DropScratchNamespace(std::string_view scratch_url);

// PostgreSQL's part (pg_engine.cc; pg_engine_absent.cc: NotSupported): CREATE SCHEMA name on
// the server of `url`, and DROP SCHEMA name CASCADE.
Status CreatePgSchema(std::string_view url, std::string_view schema);
Status DropPgSchema(std::string_view url, std::string_view schema);

}  // namespace folio::meta
