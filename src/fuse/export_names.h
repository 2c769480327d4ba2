// The names in the root of a `folio export` mount besides the volume files: what the export
// file system serves (export_fs.h) and what other programs open by name (the `folio raid`
// commands write to the control file of the export that holds their members). Constants only,
// so code that opens these files by path includes this without linking the FUSE layer.
//
// Thread safety: constants.
#pragma once

namespace folio::fuse {

inline constexpr char kStatsName[] = ".stats";      // live JSON, read-only
inline constexpr char kControlName[] = ".control";  // one command line per write, write-only

}  // namespace folio::fuse
