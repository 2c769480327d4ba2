// `folio fs format / status / fsck / gc`, and opening a formatted volume (OpenFsVolume) for
// them and for `folio fs mount`.
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/progress.h"
#include "base/timespec.h"
#include "base/units.h"
#include "cli/cli_util.h"
#include "fs/fs_cli.h"     // tools/fs
#include "fs/fs_volume.h"  // tools/fs
#include "fs/fsck.h"
#include "fs/store/store_url.h"
#include "cli/device_spec.h"

namespace folio::cli {

namespace {

using Json = nlohmann::ordered_json;

// Exit codes of the inspecting commands: a volume that is not there or not ours is bad input.
int Fail(std::string_view prefix, const Status& s) { return ExitWithStatus(prefix, s); }

std::string Age(int64_t ns) {
  if (ns <= 0) return "-";
  return FormatElapsed(static_cast<uint64_t>(ns / 1000000));
}

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return TimespecToNs(ts);
}

}  // namespace

Result<FsVolume> OpenFsVolume(const std::string& meta_url, bool read_only, StoreAccess store,
                              meta::MetaOpenOptions mo) {
  FsVolume v;
  mo.read_only = read_only;
  FOLIO_ASSIGN_OR_RETURN(v.meta, meta::OpenMetaEngine(meta_url, mo));
  FOLIO_ASSIGN_OR_RETURN(std::optional<meta::FormatRecord> f, fs::ReadFormat(v.meta.get()));
  if (!f) {
    return Status::InvalidArgument(meta_url +
                                   ": no Folio FS volume here; create one with 'folio fs format " +
                                   meta_url + " NAME --storage dir:PATH'");
  }
  v.format = *f;
  if (store == StoreAccess::kNone) return v;
  store::StoreOptions so;
  so.prefix = v.format.name;
  Result<std::unique_ptr<store::BlockStore>> st =
      store::OpenBlockStore(v.format.store_url, so, DeviceOpener(DeviceOpenOptions{}));
  if (!st.ok()) {
    return st.status().WithContext("volume '" + v.format.name + "' at " + meta_url +
                                   ": its store " + v.format.store_url);
  }
  v.store = std::move(*st);
  return v;
}

int RunFsFormat(const FsFormatConfig& c) {
  constexpr char kPrefix[] = "folio fs format";
  Status valid = fs::ValidateFormatOptions(c.format);
  if (!valid.ok()) return Fail(kPrefix, valid);
  meta::MetaOpenOptions mo;
  Result<std::unique_ptr<meta::MetaEngine>> meta = meta::OpenMetaEngine(c.meta_url, mo);
  if (!meta.ok()) return Fail(kPrefix, meta.status());
  // The metadata is checked first: a volume there is refused before its store is touched.
  Result<std::optional<meta::FormatRecord>> existing = fs::ReadFormat(meta->get());
  if (existing.ok() && *existing && !c.format.force) {
    return UsageError(kPrefix, c.meta_url + " already holds volume '" + (*existing)->name + "' (" +
                                   (*existing)->uuid +
                                   "); use --force to replace it (its data is lost)");
  }
  if (!existing.ok() && !(c.format.force && existing.status().code() == StatusCode::kNotSupported)) {
    return Fail(kPrefix, existing.status());
  }
  store::FormatOptions so;
  so.force = c.format.force;
  Status s = store::FormatBlockStore(c.format.store_url, c.format.name, so, DeviceOpener(DeviceOpenOptions{}));
  if (!s.ok()) {
    if (s.code() == StatusCode::kExists) {
      return UsageError(kPrefix, std::string(s.message()) + "; use --force to replace it");
    }
    return Fail(kPrefix, s);
  }
  Result<meta::FormatRecord> f = fs::FormatVolume(meta->get(), c.format);
  if (!f.ok()) return Fail(kPrefix, f.status());
  std::printf("formatted volume '%s' (%s): metadata %s, store %s, block size %s, packing below "
              "%s\n",
              f->name.c_str(), f->uuid.c_str(), (*meta)->url().c_str(), f->store_url.c_str(),
              FormatSize(f->block_bytes).c_str(),
              f->pack_below_bytes ? FormatSize(f->pack_below_bytes).c_str() : "off");
  return kExitOk;
}

int RunFsStatus(const FsInspectConfig& c) {
  constexpr char kPrefix[] = "folio fs status";
  Result<FsVolume> v = OpenFsVolume(c.meta_url, /*read_only=*/true, StoreAccess::kNone);
  if (!v.ok()) return Fail(kPrefix, v.status());
  std::vector<meta::Session> sessions;
  int64_t used_bytes = 0, used_inodes = 0;
  uint64_t pending = 0;
  Status s = v->meta->Transact("status", meta::TxnMode::kRead, [&](meta::Txn& t) -> Status {
    FOLIO_ASSIGN_OR_RETURN(sessions, t.ListSessions());
    FOLIO_ASSIGN_OR_RETURN(used_bytes, t.GetCounter(meta::Counter::kUsedBytes));
    FOLIO_ASSIGN_OR_RETURN(used_inodes, t.GetCounter(meta::Counter::kUsedInodes));
    FOLIO_ASSIGN_OR_RETURN(auto items, t.ListDeletions(INT64_MAX, 1000000));
    pending = items.size();
    return Status::OK();
  });
  if (!s.ok()) return Fail(kPrefix, s);
  const meta::FormatRecord& f = v->format;
  const int64_t now = NowNs();
  Json j;
  j["name"] = f.name;
  j["uuid"] = f.uuid;
  j["meta"] = v->meta->url();
  j["store"] = f.store_url;
  j["format_version"] = f.format_version;
  j["block_bytes"] = f.block_bytes;
  j["pack_below_bytes"] = f.pack_below_bytes;
  j["deletion_grace_ms"] = f.deletion_grace_ms;
  j["session_timeout_ms"] = f.session_timeout_ms;
  j["used_bytes"] = used_bytes;
  j["used_inodes"] = used_inodes;
  j["pending_deletions"] = pending;
  Json sj = Json::array();
  for (const meta::Session& ss : sessions) {
    const bool stale = now - ss.heartbeat_ns > f.session_timeout_ms * 1000000;
    sj.push_back(Json{{"id", meta::Raw(ss.id)},
                      {"host", ss.host},
                      {"pid", ss.pid},
                      {"mountpoint", ss.mountpoint},
                      {"read_only", ss.read_only},
                      {"shared", ss.shared},
                      {"version", ss.version},
                      {"heartbeat_age_ms", (now - ss.heartbeat_ns) / 1000000},
                      {"stale", stale}});
  }
  j["sessions"] = std::move(sj);
  if (c.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("volume     %s (%s), format version %u\n", f.name.c_str(), f.uuid.c_str(),
              static_cast<unsigned>(f.format_version));
  std::printf("metadata   %s\nstore      %s\n", v->meta->url().c_str(), f.store_url.c_str());
  std::printf("blocks     %s, packing below %s, deletion grace %s\n",
              FormatSize(f.block_bytes).c_str(),
              f.pack_below_bytes ? FormatSize(f.pack_below_bytes).c_str() : "off",
              FormatElapsed(static_cast<uint64_t>(f.deletion_grace_ms)).c_str());
  std::printf("usage      %s in %lld inodes\n", FormatSize(static_cast<uint64_t>(used_bytes)).c_str(),
              static_cast<long long>(used_inodes));
  std::printf("deletions  %llu pending\n", static_cast<unsigned long long>(pending));
  std::printf("sessions   %zu\n", sessions.size());
  for (const meta::Session& ss : sessions) {
    const bool stale = now - ss.heartbeat_ns > f.session_timeout_ms * 1000000;
    std::printf("  %llu  %s pid %u  %s%s%s  heartbeat %s ago%s\n",
                static_cast<unsigned long long>(meta::Raw(ss.id)), ss.host.c_str(), ss.pid,
                ss.mountpoint.c_str(), ss.read_only ? " (ro)" : "", ss.shared ? " (shared)" : "",
                Age(now - ss.heartbeat_ns).c_str(), stale ? " (stale)" : "");
  }
  return kExitOk;
}

namespace {

Json FsckJson(const fs::FsckReport& r) {
  Json j;
  j["inodes"] = r.inodes;
  j["directories"] = r.directories;
  j["files"] = r.files;
  j["entries"] = r.entries;
  j["chunks"] = r.chunks;
  j["slices"] = r.slices;
  j["objects"] = r.objects;
  j["object_bytes"] = r.object_bytes;
  j["packs"] = r.packs;
  j["pack_entries"] = r.pack_entries;
  j["checksum_failures"] = r.checksum_failures;
  j["repaired"] = r.repaired;
  j["problems"] = r.problems;
  j["clean"] = r.clean();
  return j;
}

}  // namespace

int RunFsFsck(const FsInspectConfig& c) {
  constexpr char kPrefix[] = "folio fs fsck";
  Result<FsVolume> v = OpenFsVolume(c.meta_url, /*read_only=*/!c.repair);
  if (!v.ok()) return Fail(kPrefix, v.status());
  ProgressOptions po;
  po.mode = c.json ? ProgressMode::kOff : ProgressMode::kAuto;
  auto progress = std::make_unique<ProgressReporter>("fsck", 0, po);
  fs::FsckOptions fo;
  fo.repair = c.repair;
  fo.progress = [&progress](uint64_t done, uint64_t total) {
    (void)total;
    progress->Update(done);
  };
  Result<fs::FsckReport> r = fs::Fsck(v->meta.get(), v->store.get(), fo);
  progress->Finish();
  if (!r.ok()) return Fail(kPrefix, r.status());
  bool clean = r->clean();
  if (c.repair && !clean) {
    // What is left after the repair decides the exit code.
    fs::FsckOptions again;
    Result<fs::FsckReport> after = fs::Fsck(v->meta.get(), v->store.get(), again);
    if (!after.ok()) return Fail(kPrefix, after.status());
    clean = after->clean();
  }
  if (c.json) {
    Json j = FsckJson(*r);
    j["clean_after_repair"] = clean;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    for (const std::string& p : r->problems) std::printf("problem: %s\n", p.c_str());
    std::printf("fsck %s: %llu inodes (%llu directories, %llu files), %llu entries, %llu chunks, "
                "%llu slices, %llu objects (%s, CRC32C checked), %llu packs with %llu entries; "
                "%zu problems, %llu repaired, %llu checksum failures\n",
                v->format.name.c_str(), static_cast<unsigned long long>(r->inodes),
                static_cast<unsigned long long>(r->directories),
                static_cast<unsigned long long>(r->files),
                static_cast<unsigned long long>(r->entries),
                static_cast<unsigned long long>(r->chunks),
                static_cast<unsigned long long>(r->slices),
                static_cast<unsigned long long>(r->objects), FormatSize(r->object_bytes).c_str(),
                static_cast<unsigned long long>(r->packs),
                static_cast<unsigned long long>(r->pack_entries), r->problems.size(),
                static_cast<unsigned long long>(r->repaired),
                static_cast<unsigned long long>(r->checksum_failures));
  }
  if (!clean) {
    return RuntimeError(kPrefix, v->format.name + ": " + std::to_string(r->problems.size()) +
                                     " problems" + (c.repair ? " (some could not be repaired)" :
                                                               "; run with --repair to fix what "
                                                               "the metadata can"));
  }
  return kExitOk;
}

int RunFsGc(const FsInspectConfig& c) {
  constexpr char kPrefix[] = "folio fs gc";
  Result<FsVolume> v = OpenFsVolume(c.meta_url, /*read_only=*/!c.delete_leaked);
  if (!v.ok()) return Fail(kPrefix, v.status());
  fs::GcOptions go;
  go.delete_leaked = c.delete_leaked;
  go.safety_window_ms = c.safety_window_ms;
  Result<fs::GcReport> r = fs::Gc(v->meta.get(), v->store.get(), go);
  if (!r.ok()) return Fail(kPrefix, r.status());
  if (c.json) {
    Json j;
    j["objects"] = r->objects;
    j["object_bytes"] = r->object_bytes;
    j["referenced"] = r->referenced;
    j["leaked"] = r->leaked;
    j["leaked_bytes"] = r->leaked_bytes;
    j["queued"] = r->queued;
    j["deleted"] = r->deleted;
    j["pending_deletions"] = r->pending_deletions;
    j["packs"] = r->packs;
    j["pack_bytes"] = r->pack_bytes;
    j["pack_live_bytes"] = r->pack_live_bytes;
    j["packs_below_half"] = r->packs_below_half;
    j["dry_run"] = !c.delete_leaked;
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("gc %s: %llu objects (%s), %llu referenced, %llu leaked (%s)%s; %llu deleted now, "
              "%llu deletions pending; %llu packs (%s, %s live, %llu below half live)\n",
              v->format.name.c_str(), static_cast<unsigned long long>(r->objects),
              FormatSize(r->object_bytes).c_str(), static_cast<unsigned long long>(r->referenced),
              static_cast<unsigned long long>(r->leaked), FormatSize(r->leaked_bytes).c_str(),
              c.delete_leaked
                  ? (", " + std::to_string(r->queued) + " queued for deletion").c_str()
                  : " (dry run: --delete queues them)",
              static_cast<unsigned long long>(r->deleted),
              static_cast<unsigned long long>(r->pending_deletions),
              static_cast<unsigned long long>(r->packs), FormatSize(r->pack_bytes).c_str(),
              FormatSize(r->pack_live_bytes).c_str(),
              static_cast<unsigned long long>(r->packs_below_half));
  return kExitOk;
}

}  // namespace folio::cli
