"""The measurement layer: runs the sweep a prediction file needs and writes what it measured.

Grouped by concept:

- :mod:`~pytest_roofline.measure.plan`: what to measure and when to stop: ``points`` (the sweep points the
  selected predictions need, with their decision targets) and ``stopping`` (the adaptive sweep's stopping rule,
  the knee's bisection);
- :mod:`~pytest_roofline.measure.stats`: statistics: ``glossary`` (every metric defined once), ``summary`` (a
  point's ``client`` object), ``intervals`` (every figure's confidence interval), ``steady`` (the steady window,
  MSER-5), ``repeats`` (``sweep.repeats`` combined);
- :mod:`~pytest_roofline.measure.engine`: the vLLM engine and what it says about itself: the lifecycle
  (``Engine``, ``Endpoint``), ``startup_log``, ``metrics`` (``/metrics``), the self-report, ``tiny_model``
  (the model the CPU engine serves);
- :mod:`~pytest_roofline.measure.results`: results documents: ``file`` (the results file, written and replayed),
  ``peers`` (vllm bench serve, GuideLLM, AIPerf files read as one), ``match`` (does a replayed file match its
  prediction file), ``calibration_points``;
- orchestration: :mod:`~pytest_roofline.measure.sweep` (runs the planned points against an engine or endpoint:
  ``Measurements``, ``run_point``), :mod:`~pytest_roofline.measure.loadgen` (the closed/open-loop streaming load
  generator; ``datasets``: the prompts a load is made of), :mod:`~pytest_roofline.measure.target` (the
  ``Target`` and ``MeasurementProvider`` protocols), :mod:`~pytest_roofline.measure.progress` (what a sweep
  reports as it goes), :mod:`~pytest_roofline.measure.gpu` (which GPU this machine has).

The contract the layers above read (the records, ``Measurement``, ``PointMode``, ``Interval``, ``StopCheck``)
lives in :mod:`pytest_roofline.quantities.measurement`. Nothing here imports pytest.
"""
