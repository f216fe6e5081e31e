"""The host simulation runtime: a built program on P simulated ranks in one process
(a worker process, apart from the caller's).

* ``runtime/`` -- the C++ runtime, shipped as sources and compiled on first use
  (:mod:`.library`), loaded with ctypes (:mod:`.runtime`): it loads kernels and orchestrations,
  runs tasks as block threads, latches errors and enforces the time limits.
* :mod:`.world` -- the ranks: a worker thread each, running its chip dispatches in order.
* :mod:`.l3` -- the L3 orchestration API on that world, so generated HOST orchestrators run.
* :mod:`.launch` -- running a program: a HOST orchestrator, or a chip orchestration on every
  rank through the same L3 objects; :mod:`.arguments` -- its inputs, checked and bound;
  :mod:`.result` -- its tensors and windows by name.
* :mod:`.isolation` -- running a prepared launch in a worker process (:mod:`.worker`), so the
  caller survives a kernel that crashes, and no abandoned kernel thread outlives its run's worker.
* :mod:`.program` -- opening a compiled chip tree; :mod:`.tensors` -- host tensors as
  descriptors; :mod:`.errors` -- error codes and :class:`.errors.SimulationError`.

The public entry point is :mod:`pypto_build.sim`.
"""
