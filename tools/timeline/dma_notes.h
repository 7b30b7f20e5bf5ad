// Where each packet's bytes went: the MR a WRITE, READ or atomic targets (by its rkey), the
// receive a SEND consumes (its SGE's lkey), the local buffer a READ response fills. Read from the
// traces' MRs and posted work requests, in time order, and added to the timeline as DMA events
// on the receiving host's lane.
#pragma once

#include "model.h"

namespace rdmaemu::timeline {

void add_dma_notes(const std::vector<TraceFile>& traces, Timeline& t);

} // namespace rdmaemu::timeline
