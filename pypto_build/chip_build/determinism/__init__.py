"""The determinism checks: ``check-render`` and ``check-reproducible``.

Both prove an output a function of its inputs alone the same way: make it twice
under the varied environment of :mod:`.environment`, compare the two byte for byte, and on a
difference write a report (diffoscope's, else a built-in one: :mod:`.diffreport`). They live
together so that they share that variation and that reporting instead of each keeping a copy,
and they sit in the engine because they check the engine's output: :mod:`.render` renders
through the engine (its second render in :mod:`.render_worker`, a process of its own), and
:mod:`.wheels` builds a project's wheel with pip, the real consumer of the build hook, comparing
the wheels with :mod:`.wheel_diff`. The command line's ``check-render`` and
``check-reproducible`` are thin adapters over :func:`.render.check_render` and
:func:`.wheels.check_reproducible`.
"""
