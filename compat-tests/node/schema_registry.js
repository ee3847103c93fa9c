'use strict'
// @kafkajs/confluent-schema-registry 4.1.0 with kafkajs 2.2.4 against kafkalite's schema registry: registers
// Avro, JSON Schema and Protobuf (one with a reference) schemas, encodes records, produces and consumes them
// through kafkalite, decodes them with a fresh registry client (schemas fetched by id); an incompatible schema
// is refused. Usage: node schema_registry.js BOOTSTRAP REGISTRY_URL; prints one JSON object.
const { Kafka, logLevel } = require('kafkajs')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

const [bootstrap, url] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kafkalite-sr', brokers: [bootstrap], logLevel: logLevel.WARN })

const AVRO = { type: 'record', name: 'User', namespace: 'js', fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }] }
const AVRO_BAD = { ...AVRO, fields: [{ name: 'name', type: 'int' }, { name: 'age', type: 'int' }] }
const JSON_SCHEMA = { type: 'object', properties: { id: { type: 'integer' }, item: { type: 'string' } }, required: ['id'] }
const MONEY = 'syntax = "proto3";\npackage shared;\nmessage Money { string currency = 1; int64 units = 2; }\n'
const ORDER = 'syntax = "proto3";\npackage shop;\nimport "shared/money.proto";\n' +
  'message Order { int64 id = 1; shared.Money total = 2; repeated string tags = 3; Status status = 4;\n' +
  '  enum Status { NEW = 0; PAID = 1; } }\n'
const PLAIN = 'syntax = "proto3";\npackage p;\nmessage Ping { string text = 1; int32 n = 2; }\n'

async function roundTrip (topic, encoded) {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  await admin.disconnect()
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: encoded.map(value => ({ value })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `g-${topic}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out consuming ${topic}`)), 60000)
    consumer.run({ eachMessage: async ({ message }) => {
      got.push(message.value)
      if (got.length === encoded.length) { clearTimeout(timer); resolve() }
    } }).catch(reject)
  })
  await consumer.disconnect()
  return got
}

async function decodeAll (values) {
  const fresh = new SchemaRegistry({ host: url })   // no cache: every schema comes from the registry by id
  const out = []
  for (const v of values) out.push(await fresh.decode(v))
  return out
}

async function main () {
  const registry = new SchemaRegistry({ host: url })
  const result = {}

  const avro = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(AVRO) }, { subject: 'js-users-value' })
  const users = [{ name: 'ann', age: 30 }, { name: 'bob', age: 41 }]
  const avroEncoded = await Promise.all(users.map(u => registry.encode(avro.id, u)))
  result.avro = { id: avro.id, decoded: await decodeAll(await roundTrip('js-users', avroEncoded)),
    latest: await registry.getLatestSchemaId('js-users-value') }
  try {
    await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(AVRO_BAD) }, { subject: 'js-users-value' })
    result.incompatible = 'registered'
  } catch (e) {
    result.incompatible = { status: e.status || null, message: String(e.message) }
  }

  const js = await registry.register({ type: SchemaType.JSON, schema: JSON.stringify(JSON_SCHEMA) }, { subject: 'js-orders-value' })
  const orders = [{ id: 1, item: 'a' }, { id: 2, item: 'b' }]
  const jsEncoded = await Promise.all(orders.map(o => registry.encode(js.id, o)))
  result.json = { id: js.id, decoded: await decodeAll(await roundTrip('js-orders', jsEncoded)) }

  const ping = await registry.register({ type: SchemaType.PROTOBUF, schema: PLAIN }, { subject: 'js-ping-value' })
  const pings = [{ text: 'hi', n: 1 }, { text: 'there', n: 2 }]
  const pingEncoded = await Promise.all(pings.map(p => registry.encode(ping.id, p)))
  result.protobuf = { id: ping.id, decoded: (await decodeAll(await roundTrip('js-ping', pingEncoded))).map(m => m.toJSON()) }

  await registry.register({ type: SchemaType.PROTOBUF, schema: MONEY }, { subject: 'shared/money.proto' })
  const order = await registry.register({ type: SchemaType.PROTOBUF, schema: ORDER,
    references: [{ name: 'shared/money.proto', subject: 'shared/money.proto', version: 1 }] }, { subject: 'js-shop-value' })
  const shop = [{ id: 7, total: { currency: 'EUR', units: 12 }, tags: ['x', 'y'], status: 1 }]
  const shopEncoded = await Promise.all(shop.map(s => registry.encode(order.id, s)))
  result.protobuf_ref = { id: order.id, decoded: (await decodeAll(await roundTrip('js-shop', shopEncoded))).map(m => m.toJSON()) }

  process.stdout.write(JSON.stringify(result) + '\n')
}

main().catch(e => { process.stderr.write(`${e.stack || e}\n`); process.exit(1) })
