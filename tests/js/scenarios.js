// KafkaJS scenarios: tests/clients/test_kafkajs.py runs each against Odradek and
// Apache Kafka 4.4 and compares the results.
//
//   node scenarios.js SCENARIO BOOTSTRAP TOPIC GROUP
//
// Scenarios: produce-consume, group, transact. Prints one JSON line with the
// result, or {"error": "..."} and exits 1.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const TIMEOUT_MS = 60000

// The versions of each request KafkaJS sent (from its debug log), e.g. {"Produce": [7]};
// errors it logs go to stderr.
const sentVersions = {}

function logCreator () {
  return ({ level, log }) => {
    const request = /^Request (\w+)\(key: \d+, version: (\d+)\)$/.exec(log.message)
    if (request) {
      const versions = (sentVersions[request[1]] = sentVersions[request[1]] || [])
      if (!versions.includes(Number(request[2]))) versions.push(Number(request[2]))
    } else if (level === logLevel.ERROR) {
      console.error(JSON.stringify(log))
    }
  }
}

function client (bootstrap) {
  return new Kafka({
    clientId: 'odradek-kafkajs',
    brokers: [bootstrap],
    logLevel: logLevel.DEBUG,
    logCreator,
    retry: { retries: 8, initialRetryTime: 100 }
  })
}

async function waitFor (what, cond) {
  const deadline = Date.now() + TIMEOUT_MS
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function createTopics (kafka, names, numPartitions) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    const created = await admin.createTopics({
      topics: names.map((topic) => ({ topic, numPartitions, replicationFactor: 1 })),
      waitForLeaders: true
    })
    if (!created) throw new Error(`topics ${names} already exist`)
  } finally {
    await admin.disconnect()
  }
}

// n records, record i to partition i % partitions; the offsets they got, by partition
async function produceSpread (kafka, topic, n, partitions) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  try {
    const messages = []
    for (let i = 0; i < n; i++) {
      messages.push({ partition: i % partitions, key: `k-${i}`, value: `v-${i}`, headers: { seq: `${i}` } })
    }
    await producer.send({ topic, messages })
  } finally {
    await producer.disconnect()
  }
}

async function committedOffsets (kafka, groupId, topic) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    const [fetched] = await admin.fetchOffsets({ groupId, topics: [topic] })
    const out = {}
    for (const p of fetched.partitions) out[p.partition] = Number(p.offset)
    return out
  } finally {
    await admin.disconnect()
  }
}

// Reads a topic from the start, outside any group, until `count` records came (and
// a little longer, for any record too many).
async function readTopic (kafka, topic, count, readUncommitted) {
  const consumer = kafka.consumer({ groupId: `${topic}-reader`, readUncommitted, maxWaitTimeInMs: 200 })
  const got = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const headers = Object.entries(message.headers).map(([k, v]) => [k, v.toString()])
        got.push({ partition, offset: Number(message.offset), key: message.key.toString(), value: message.value.toString(), headers })
      }
    })
    await waitFor(`${count} records of ${topic}`, () => got.length >= count)
    await new Promise((resolve) => setTimeout(resolve, 500))
  } finally {
    await consumer.disconnect()
  }
  return got
}

async function produceConsume (kafka, topic) {
  await createTopics(kafka, [topic], 3)
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < 30; i++) {
    messages.push({ partition: i % 3, key: `k-${i}`, value: `v-${i}`, headers: { seq: `${i}` } })
  }
  const sent = await producer.send({ topic, messages, acks: -1 })
  await producer.disconnect()
  const consumed = {}
  for (const r of await readTopic(kafka, topic, 30, false)) {
    (consumed[r.partition] = consumed[r.partition] || []).push({ offset: r.offset, key: r.key, value: r.value, headers: r.headers })
  }
  const produced = {}
  for (const s of sent) produced[s.partition] = { error: s.errorCode, base_offset: Number(s.baseOffset) }
  return { produced, consumed }
}

// Three members of a classic group on six partitions, all started together; once each
// has two partitions the records are produced, each member consumes its own.
async function group (kafka, topic, groupId) {
  await createTopics(kafka, [topic], 6)
  const members = [0, 1, 2].map(() => ({
    consumer: kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 300, maxWaitTimeInMs: 200 }),
    assigned: [],
    consumed: {},
    values: []
  }))
  try {
    await Promise.all(members.map(async (m) => {
      m.consumer.on(m.consumer.events.GROUP_JOIN, (e) => {
        m.assigned = (e.payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b)
      })
      await m.consumer.connect()
      await m.consumer.subscribe({ topics: [topic], fromBeginning: true })
      await m.consumer.run({
        eachMessage: async ({ partition, message }) => {
          m.consumed[partition] = (m.consumed[partition] || 0) + 1
          m.values.push(message.value.toString())
        }
      })
    }))
    await waitFor('two partitions for each member', () => {
      const all = new Set(members.flatMap((m) => m.assigned))
      return all.size === 6 && members.every((m) => m.assigned.length === 2)
    })
    await produceSpread(kafka, topic, 60, 6)
    await waitFor('every record to be consumed', () => members.reduce((n, m) => n + m.values.length, 0) >= 60)
    await new Promise((resolve) => setTimeout(resolve, 500))
    const admin = kafka.admin()
    await admin.connect()
    const { groups: [described] } = await admin.describeGroups([groupId])
    await admin.disconnect()
    // before the members leave: each leave makes the others rebalance
    const seen = members
      .map((m) => ({ assigned: m.assigned, consumed: m.consumed, values: m.values.length }))
      .sort((a, b) => a.assigned[0] - b.assigned[0])
    for (const m of members) await m.consumer.disconnect()
    return {
      members: seen,
      distinct: new Set(members.flatMap((m) => m.values)).size,
      described: { state: described.state, protocol: described.protocol, members: described.members.length },
      committed: await committedOffsets(kafka, groupId, topic)
    }
  } finally {
    for (const m of members) await m.consumer.disconnect()
  }
}

// Consume-transform-produce: each batch of the input is written upper-cased to the
// output in a transaction that also commits the group's offsets (sendOffsets); the
// first transaction is aborted, its batch left unresolved and so read again.
async function transact (kafka, topic, groupId) {
  const input = topic
  const output = `${topic}-out`
  await createTopics(kafka, [input, output], 3)
  await produceSpread(kafka, input, 30, 3)
  const producer = kafka.producer({ transactionalId: `${groupId}-txn`, idempotent: true, maxInFlightRequests: 1 })
  const consumer = kafka.consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 200, maxBytesPerPartition: 200 })
  let aborted = 0
  let committed = 0
  let transactions = 0
  await producer.connect()
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [input], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        if (batch.isEmpty()) return
        const txn = await producer.transaction()
        await txn.send({
          topic: output,
          messages: batch.messages.map((m) => ({ partition: batch.partition, key: m.key, value: m.value.toString().toUpperCase() }))
        })
        if (aborted === 0) {
          await txn.abort()
          aborted += batch.messages.length
          return
        }
        const next = (BigInt(batch.lastOffset()) + 1n).toString()
        await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: input, partitions: [{ partition: batch.partition, offset: next }] }] })
        await txn.commit()
        resolveOffset(batch.lastOffset())
        committed += batch.messages.length
        transactions++
      }
    })
    await waitFor('every record to be transformed', () => committed >= 30)
  } finally {
    await consumer.disconnect()
    await producer.disconnect()
  }
  const visible = await readTopic(kafka, output, 30, false)
  const values = new Map()
  for (const r of visible) values.set(r.value, (values.get(r.value) || 0) + 1)
  let eachOnce = 0
  for (let i = 0; i < 30; i++) if (values.get(`V-${i}`) === 1) eachOnce++
  const all = await readTopic(kafka, output, 30 + aborted, true)
  return {
    aborted,
    committed,
    multiple_transactions: transactions > 1,
    read_committed: { count: visible.length, each_once: eachOnce },
    read_uncommitted: all.length,
    offsets: await committedOffsets(kafka, groupId, input)
  }
}

const scenarios = { 'produce-consume': produceConsume, group, transact }

async function main () {
  const [name, bootstrap, topic, groupId] = process.argv.slice(2)
  const run = scenarios[name]
  if (!run || !groupId) {
    console.error('usage: node scenarios.js produce-consume|group|transact BOOTSTRAP TOPIC GROUP')
    process.exit(2)
  }
  const timer = setTimeout(() => {
    console.log(JSON.stringify({ error: `scenario ${name} took longer than ${TIMEOUT_MS * 2} ms` }))
    process.exit(1)
  }, TIMEOUT_MS * 2)
  try {
    const result = await run(client(bootstrap), topic, groupId)
    for (const versions of Object.values(sentVersions)) versions.sort((a, b) => a - b)
    result.request_versions = sentVersions
    console.log(JSON.stringify(result))
    clearTimeout(timer)
  } catch (err) {
    console.log(JSON.stringify({ error: `${err.name}: ${err.message}`, type: err.type, stack: err.stack }))
    process.exit(1)
  }
}

main()
