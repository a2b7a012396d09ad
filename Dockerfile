# berth serve as a container: docker build -t berth:0.1.0 .
FROM python:3.11-slim
WORKDIR /src
COPY pyproject.toml README.md ./
COPY berth ./berth
RUN pip install --no-cache-dir . && rm -rf /src
WORKDIR /
ENV MPLCONFIGDIR=/tmp PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["berth"]
CMD ["serve"]
