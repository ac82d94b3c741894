// The process's modules (the executable and its shared objects) with their address ranges and load biases, as a
// report names a return address or a fault's instruction: module+offset.
#pragma once

#include <vector>

#include "analysis/events.h"

namespace asynccheck {

// As the loader lists them (dl_iterate_phdr): what the capture keeps at the end of a run.
std::vector<Module> loaded_modules();

// The same read from /proc/self/maps, without the loader's lock: what a report written while another thread is stopped
// by a fault can still read (that thread may hold the lock dl_iterate_phdr takes: a crash inside the unwinder's or the
// loader's own callbacks).
// Every file-backed module mapped from its first byte (an ELF header at its lowest mapping): its range (the lowest
// to the highest of its mappings) and its load bias (the ELF header's first loadable segment against where it was
// mapped: 0 for a program linked at a fixed address), as loaded_modules gives them.
std::vector<Module> mapped_modules();

}  // namespace asynccheck
