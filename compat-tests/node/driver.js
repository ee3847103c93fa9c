'use strict'
// kafkajs 2.2.4 driver for the compat tests: one JSON command per stdin line, one JSON reply per stdout line.
// kafkajs has no assign(): its only consumer is the group consumer, so `consume` joins a fresh group, seeks
// the wanted partitions and ignores the others. Its headers API is an object (duplicate names become arrays),
// so header order is kept only for names that are already grouped. Only gzip is built in (snappy, lz4 and
// zstd need codec plugins that are not installed).
const readline = require('readline')
const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes } = require('kafkajs')

const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD }

const logCreator = () => ({ namespace, level, label, log }) => {
  process.stderr.write(`${new Date().toISOString()} ${label} [${namespace}] ${log.message} ${JSON.stringify(log)}\n`)
}

// c.ssl: kafkajs' tls options (PEM strings); c.sasl: { mechanism, username, password } or, for OAUTHBEARER,
// { mechanism: 'oauthbearer', token } (an unsecured JWT handed out by oauthBearerProvider)
function security (c) {
  const out = {}
  if (c.ssl) out.ssl = c.ssl
  if (c.sasl) {
    out.sasl = c.sasl.mechanism === 'oauthbearer'
      ? { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: c.sasl.token }) }
      : c.sasl
  }
  if (c.retries != null) out.retry = { retries: c.retries, initialRetryTime: 200 }
  if (c.reauthentication_threshold_ms != null) out.reauthenticationThreshold = c.reauthentication_threshold_ms
  return out
}

function kafka (c) {
  return new Kafka({ clientId: 'kafkalite-compat', brokers: [c.bootstrap], logLevel: logLevel.WARN, logCreator,
    connectionTimeout: 5000, requestTimeout: 30000, retry: { retries: 8, initialRetryTime: 200 }, ...security(c) })
}

const b64 = s => (s == null ? null : Buffer.from(s, 'base64'))
const unb64 = b => (b == null ? null : Buffer.from(b).toString('base64'))

async function produce (c) {
  const idempotent = c.idempotent === true
  const producer = kafka(c).producer({ idempotent, maxInFlightRequests: idempotent ? 1 : undefined,
    allowAutoTopicCreation: false })
  await producer.connect()
  try {
    const messages = c.records.map(r => {
      const headers = {}
      for (const [k, v] of r.headers) {
        if (k in headers) headers[k] = [].concat(headers[k], [b64(v)])
        else headers[k] = b64(v)
      }
      const m = { key: b64(r.key), value: b64(r.value), headers }
      if (r.partition != null) m.partition = r.partition
      if (r.timestamp != null) m.timestamp = String(r.timestamp)
      return m
    })
    const acks = c.acks === 'all' ? -1 : Number(c.acks)
    const chunk = 5000
    for (let i = 0; i < messages.length; i += chunk) {
      await producer.send({ topic: c.topic, acks, compression: CODECS[c.compression || 'none'],
        messages: messages.slice(i, i + chunk), timeout: c.timeout_ms })
    }
    return { offsets: [] }
  } finally {
    await producer.disconnect()
  }
}

async function consume (c) {
  const consumer = kafka(c).consumer({ groupId: `compat-kafkajs-${process.pid}-${Date.now()}-${Math.random()}`,
    maxWaitTimeInMs: 200, sessionTimeout: 10000, heartbeatInterval: 1000, retry: { retries: 8 },
    maxBytesPerPartition: c.max_fetch_bytes || 1048576, maxBytes: c.max_fetch_bytes ? c.max_fetch_bytes * 2 : 10485760 })
  const wanted = new Set(c.partitions)
  const records = []
  let done
  const finished = new Promise(resolve => { done = resolve })
  const timer = setTimeout(() => done(), c.timeout_ms || 60000)
  let crash = null
  // a crash kafkajs recovers from itself (restart: true, e.g. no broker reachable while one restarts) is not the
  // end of the run: only one it does not restart from is
  consumer.on(consumer.events.CRASH, e => { if (e.payload.restart === false) { crash = e.payload.error; done() } })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [c.topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch }) => {
        if (!wanted.has(batch.partition)) return
        for (const m of batch.messages) {
          const headers = []
          for (const [k, v] of Object.entries(m.headers || {})) {
            if (Array.isArray(v)) for (const x of v) headers.push([k, unb64(x)])
            else headers.push([k, unb64(v)])
          }
          records.push({ key: unb64(m.key), value: unb64(m.value), headers, timestamp: Number(m.timestamp),
            partition: batch.partition, offset: Number(m.offset) })
        }
        if (records.length >= c.count) done()
      }
    })
    if (c.start !== 'earliest') {
      for (const p of c.partitions) consumer.seek({ topic: c.topic, partition: p, offset: String(c.start) })
    }
    await finished
    if (crash) throw crash
  } finally {
    clearTimeout(timer)
    await consumer.disconnect()
  }
  return { records }
}

// A member of group c.group: subscribe from the beginning, commit after every batch (kafkajs' autoCommit),
// until c.count distinct records (a record delivered again after a rejoin is returned again but counted once)
// or the timeout; then it waits until the group holds the offsets of everything it read (read back through the
// admin API) and leaves.
//
// kafkajs commits what the runner of its current generation has *resolved*, and nothing else sticks: a new
// generation (a rejoin after NOT_COORDINATOR, or a restart after a crash, e.g. retries exhausted against the
// stopped coordinator) starts its resolved offsets at the group's committed ones and fetches from there, so the
// records read but not committed come again. Every batch, a repeated one too, is therefore resolved at the
// furthest offset read so far (never lower): the auto-commit after it then commits that. An explicit
// consumer.commitOffsets() from outside the runner does not do it: it returns without committing (no error)
// while the runner is not running, throws while a crashed consumer waits to restart, and once a new generation
// runs, the next auto-commit puts the offsets back to that generation's (lower) resolved ones, since kafkajs
// commits any resolved offset that differs from what it last committed (seen under load: each explicit commit
// of 500 followed by an auto-commit of 334, both answered NONE, OffsetFetch showing 334).
//
// A coordinator whose broker stopped refuses connections; kafkajs keeps its coordinator (and the commits and
// heartbeats to it) through the runner's retries and looks it up again only once they are exhausted and the
// consumer restarts. With kafkajs' default backoff (up to 30 s a retry, and the restart after the last one)
// that took 70 s on a loaded machine; the member caps a retry at 5 s, as an application that wants to follow
// its coordinator in seconds does (retries are unchanged).
async function groupConsume (c) {
  const started = Date.now()
  const consumer = kafka(c).consumer({ groupId: c.group, maxWaitTimeInMs: 200, sessionTimeout: 10000,
    heartbeatInterval: 1000, retry: { retries: 8, maxRetryTime: 5000 } })
  const records = []
  const seen = new Set()
  const next = {}
  let done
  const finished = new Promise(resolve => { done = resolve })
  const timer = setTimeout(() => done(), c.timeout_ms || 60000)
  let crash = null
  // a crash kafkajs recovers from itself (restart: true, e.g. no broker reachable while one restarts) is not the
  // end of the run: only one it does not restart from is
  consumer.on(consumer.events.CRASH, e => { if (e.payload.restart === false) { crash = e.payload.error; done() } })
  // the group's life as kafkajs sees it, in the driver log (attached to a failed test's report): joins, rebalances,
  // crashes, and every commit the coordinator accepted (COMMIT_OFFSETS is emitted only after an OffsetCommit
  // answered without error)
  const trace = (what, payload) => process.stderr.write(`${new Date().toISOString()} DRIVER ${c.group} ${what} ` +
    `${JSON.stringify(payload)}\n`)
  consumer.on(consumer.events.GROUP_JOIN, e => trace('joined', { memberId: e.payload.memberId,
    assignment: e.payload.memberAssignment }))
  consumer.on(consumer.events.REBALANCING, e => trace('rebalancing', e.payload))
  consumer.on(consumer.events.CRASH, e => trace('crash', { error: String(e.payload.error), restart: e.payload.restart }))
  consumer.on(consumer.events.COMMIT_OFFSETS, e => trace('committed', { memberId: e.payload.memberId,
    generation: e.payload.groupGenerationId,
    offsets: e.payload.topics.flatMap(t => t.partitions.map(p => `${p.partition}:${p.offset}`)) }))
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [c.topic], fromBeginning: true })
    let complete = false
    await consumer.run({
      autoCommit: true,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        for (const m of batch.messages) {
          if (!complete) {
            records.push({ key: unb64(m.key), value: unb64(m.value), headers: [], timestamp: Number(m.timestamp),
              partition: batch.partition, offset: Number(m.offset) })
            seen.add(`${batch.partition}:${m.offset}`)
          }
          next[batch.partition] = Math.max(next[batch.partition] || 0, Number(m.offset) + 1)
        }
        if (next[batch.partition] != null) resolveOffset(String(next[batch.partition] - 1))
        if (!complete && seen.size >= c.count) {
          complete = true
          done()
        }
      }
    })
    await finished
    if (crash) throw crash
    const offsets = Object.entries(next).map(([p, o]) => ({ partition: Number(p), offset: o }))
    // the runner keeps running (re-joining, or restarting after a crash) until the group holds what was read;
    // bounded by the time the harness gives the whole call (the consume timeout and 60 s more)
    const deadline = started + (c.timeout_ms || 60000) + 55000
    for (let attempt = 1; ; attempt++) {
      let error = null
      try {
        if (await holdsOffsets(c, offsets)) break
      } catch (e) {
        error = e
      }
      if (crash) throw crash
      if (attempt % 10 === 1 || Date.now() > deadline) {
        process.stderr.write(`${new Date().toISOString()} DRIVER ${c.group} read back ${attempt}: not held yet ` +
          `${error ? error.message : ''} (held: ${JSON.stringify(lastHeld)}, read: ${JSON.stringify(next)})\n`)
      }
      if (Date.now() > deadline) {
        throw new Error(`the group never held the offsets read ${JSON.stringify(next)}: ${JSON.stringify(lastHeld)}`)
      }
      await new Promise(resolve => setTimeout(resolve, 300))
    }
  } finally {
    clearTimeout(timer)
    await consumer.disconnect()
  }
  return { records }
}

// whether group c.group has committed at least `offsets` (read through the admin API)
let lastHeld = null
async function holdsOffsets (c, offsets) {
  const got = await withAdmin(c, admin => admin.fetchOffsets({ groupId: c.group, topics: [c.topic] }))
  const held = {}
  for (const t of got) for (const p of t.partitions) held[p.partition] = Number(p.offset)
  lastHeld = held
  return offsets.every(o => (held[o.partition] ?? -1) >= Number(o.offset))
}

async function withAdmin (c, fn) {
  const admin = kafka(c).admin()
  await admin.connect()
  try {
    return await fn(admin)
  } finally {
    await admin.disconnect()
  }
}

const ops = {
  produce,
  consume,
  group_consume: groupConsume,
  metadata: c => withAdmin(c, async a => {
    const cluster = await a.describeCluster()
    const md = await a.fetchTopicMetadata(c.topics ? { topics: c.topics } : {})
    const topics = {}
    for (const t of md.topics) topics[t.name] = t.partitions.length
    return { brokers: cluster.brokers.map(b => [b.nodeId, b.host, b.port]), topics, cluster_id: cluster.clusterId }
  }),
  create_topic: c => withAdmin(c, async a => {
    const created = await a.createTopics({ waitForLeaders: true, topics: [{ topic: c.topic,
      numPartitions: c.partitions, replicationFactor: 1,
      configEntries: Object.entries(c.topic_config || {}).map(([name, value]) => ({ name, value: String(value) })) }] })
    if (!created) throw new Error(`topic ${c.topic} already exists`)
    return {}
  }),
  create_partitions: c => withAdmin(c, async a => {
    await a.createPartitions({ topicPartitions: [{ topic: c.topic, count: c.total }] })
    return {}
  }),
  delete_topic: c => withAdmin(c, async a => { await a.deleteTopics({ topics: [c.topic] }); return {} }),
  // admin.createAcls / describeAcls with Kafka's numeric codes (kafkajs' AclResourceTypes etc. are the same)
  create_acl: c => withAdmin(c, async a => {
    await a.createAcls({ acl: [{ resourceType: c.resource_type, resourceName: c.name,
      resourcePatternType: c.pattern_type, principal: c.principal, host: '*', operation: c.operation,
      permissionType: c.permission }] })
    return {}
  }),
  describe_acls: c => withAdmin(c, async a => {
    const r = await a.describeAcls({ resourceType: 1, resourcePatternType: 1, operation: 1, permissionType: 1 })
    return { acls: r.resources.flatMap(res => res.acls.map(acl =>
      [res.resourceType, res.resourceName, res.resourcePatternType, acl.principal, acl.operation, acl.permissionType])) }
  }),
  describe_config: c => withAdmin(c, async a => {
    const r = await a.describeConfigs({ includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: c.topic }] })
    const config = {}
    for (const e of r.resources[0].configEntries) config[e.configName] = e.configValue
    if (r.resources[0].errorCode) throw new Error(`describeConfigs error ${r.resources[0].errorCode}`)
    return { config }
  }),
  alter_config: c => withAdmin(c, async a => {
    await a.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: c.topic,
      configEntries: Object.entries(c.topic_config).map(([name, value]) => ({ name, value: String(value) })) }] })
    return {}
  }),
  list_offsets: c => withAdmin(c, async a => {
    let rows
    if (c.spec === 'earliest' || c.spec === 'latest') rows = await a.fetchTopicOffsets(c.topic)
    else rows = await a.fetchTopicOffsetsByTimestamp(c.topic, c.spec)
    const row = rows.find(r => r.partition === c.partition)
    const offset = c.spec === 'earliest' ? row.low : c.spec === 'latest' ? row.high : row.offset
    return { offset: Number(offset) }
  })
}

async function main () {
  process.stdout.write(JSON.stringify({ ok: true, ready: true }) + '\n')
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const line of rl) {
    if (!line.trim()) continue
    let reply
    try {
      const cmd = JSON.parse(line)
      reply = Object.assign({ ok: true }, await ops[cmd.op](cmd))
    } catch (e) {
      reply = { ok: false, error: `${e.name}: ${e.message}`, trace: String(e.stack) }
    }
    process.stdout.write(JSON.stringify(reply) + '\n')
  }
}

main()
