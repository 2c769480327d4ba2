#include "meta/sqlite_vfs_forward.h"

namespace folio::meta {
namespace {

sqlite3_vfs* Real(sqlite3_vfs* vfs) { return ForwardingOf(vfs)->real; }

int Delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  return Real(vfs)->xDelete(Real(vfs), name, sync_dir);
}
int Access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return Real(vfs)->xAccess(Real(vfs), name, flags, out);
}
int FullPathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
  return Real(vfs)->xFullPathname(Real(vfs), name, n, out);
}
void* DlOpen(sqlite3_vfs* vfs, const char* name) { return Real(vfs)->xDlOpen(Real(vfs), name); }
void DlError(sqlite3_vfs* vfs, int n, char* out) { Real(vfs)->xDlError(Real(vfs), n, out); }
void (*DlSym(sqlite3_vfs* vfs, void* h, const char* sym))(void) {
  return Real(vfs)->xDlSym(Real(vfs), h, sym);
}
void DlClose(sqlite3_vfs* vfs, void* h) { Real(vfs)->xDlClose(Real(vfs), h); }
int Randomness(sqlite3_vfs* vfs, int n, char* out) {
  return Real(vfs)->xRandomness(Real(vfs), n, out);
}
int Sleep(sqlite3_vfs* vfs, int us) { return Real(vfs)->xSleep(Real(vfs), us); }
int CurrentTime(sqlite3_vfs* vfs, double* out) { return Real(vfs)->xCurrentTime(Real(vfs), out); }
int GetLastError(sqlite3_vfs* vfs, int n, char* out) {
  sqlite3_vfs* real = Real(vfs);
  return real->xGetLastError != nullptr ? real->xGetLastError(real, n, out) : 0;
}
int CurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  sqlite3_vfs* real = Real(vfs);
  if (real->iVersion >= 2 && real->xCurrentTimeInt64 != nullptr) {
    return real->xCurrentTimeInt64(real, out);
  }
  double d = 0;
  const int rc = real->xCurrentTime(real, &d);
  *out = static_cast<sqlite3_int64>(d * 86400000.0);
  return rc;
}

}  // namespace

void InitForwardingVfs(ForwardingVfs* w, const char* name, int sz_os_file, VfsOpenFn open,
                       VfsDeleteFn del) {
  sqlite3_vfs& v = w->vfs;
  v.iVersion = 2;
  v.szOsFile = sz_os_file;
  v.mxPathname = w->real->mxPathname;
  v.zName = name;
  v.pAppData = w;
  v.xOpen = open;
  v.xDelete = del != nullptr ? del : Delete;
  v.xAccess = Access;
  v.xFullPathname = FullPathname;
  v.xDlOpen = DlOpen;
  v.xDlError = DlError;
  v.xDlSym = DlSym;
  v.xDlClose = DlClose;
  v.xRandomness = Randomness;
  v.xSleep = Sleep;
  v.xCurrentTime = CurrentTime;
  v.xGetLastError = GetLastError;
  v.xCurrentTimeInt64 = CurrentTimeInt64;
}

}  // namespace folio::meta
