# berth serve as a container: docker build -t berth:0.1.0 .
FROM python:3.11-slim
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY berth ./berth
# The slim image has no C compiler: the placing path runs from source (docs/engine.md, "Compiled
# modules"); on a cluster the API's round trips, not the interpreter, pace berth serve.
RUN BERTH_COMPILED=0 pip install --no-cache-dir . && rm -rf /src
WORKDIR /
ENV MPLCONFIGDIR=/tmp PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["berth"]
CMD ["serve"]
