#include "base/may_block.h"

namespace folio::internal {

thread_local MayBlockSlot may_block_slot;

}  // namespace folio::internal
