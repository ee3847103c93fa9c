'use strict'
// @confluentinc/schemaregistry (Confluent's JavaScript Schema Registry client and serdes) against kafkalite's
// schema registry, records through kafkalite with kafkajs 2.2.4: for Avro, JSON Schema and Protobuf it
// registers, looks up (by id, by schema, latest, by version), serialises, produces, consumes and deserialises
// with a fresh client (every schema fetched by id), and sends an incompatible schema (RestError 409).
// Protobuf messages are built from protoc's descriptors (a FileDescriptorSet, what protoc-gen-es embeds in
// generated code). Usage: node confluent_schemaregistry.js BOOTSTRAP REGISTRY_URL DESCRIPTOR_SET; prints one
// JSON object.
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
const {
  SchemaRegistryClient, SerdeType, AvroSerializer, AvroDeserializer, JsonSerializer, JsonDeserializer,
  ProtobufSerializer, ProtobufDeserializer
} = require('@confluentinc/schemaregistry')
const { create, createFileRegistry, fromBinary, toJson } = require('@bufbuild/protobuf')
const { FileDescriptorSetSchema } = require('@bufbuild/protobuf/wkt')

const [bootstrap, url, descriptorSet] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kafkalite-cf-sr', brokers: [bootstrap], logLevel: logLevel.WARN })

const USER = { type: 'record', name: 'User', namespace: 'cf', fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }] }
const USER_V2 = { ...USER, fields: [...USER.fields, { name: 'email', type: ['null', 'string'], default: null }] }
const USER_BAD = { ...USER, fields: [{ name: 'name', type: 'int' }, { name: 'age', type: 'int' }] }
const ORDER_JSON = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  properties: { id: { type: 'integer' }, item: { type: 'string' } },
  required: ['id'],
  additionalProperties: false
}
const ORDER_JSON_BAD = { ...ORDER_JSON, properties: { ...ORDER_JSON.properties, id: { type: 'string' } } }
const ORDER_PROTO_BAD = 'syntax = "proto3";\npackage shop;\nimport "shared/money.proto";\n' +
  'message Order { string id = 1; shared.Money total = 2; }\n'

const plain = v => JSON.parse(JSON.stringify(v, (_, x) => typeof x === 'bigint' ? x.toString() : x))

async function roundTrip (topic, values) {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] })
  await admin.disconnect()
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: values.map(value => ({ value })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `g-${topic}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out consuming ${topic}`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value)
        if (got.length === values.length) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  return got
}

function fresh () { // no cache: every schema comes from the registry by id
  return new SchemaRegistryClient({ baseURLs: [url] })
}

async function refused (client, subject, info) {
  try {
    const id = await client.register(subject, info)
    return { registered: id }
  } catch (e) {
    return { status: e.status ?? null, errorCode: e.errorCode ?? null, name: e.constructor.name, message: String(e.message) }
  }
}

async function avro (client) {
  const subject = 'cf-users-value'
  const info = { schemaType: 'AVRO', schema: JSON.stringify(USER) }
  const id = await client.register(subject, info)
  const out = { id }
  out.lookupId = await fresh().getId(subject, info)
  out.version = await fresh().getVersion(subject, info, false, false)
  const byId = await fresh().getBySubjectAndId(subject, id)
  out.byId = { type: byId.schemaType ?? 'AVRO', name: JSON.parse(byId.schema).name }
  out.compatibleV2 = await client.testSubjectCompatibility(subject, { schemaType: 'AVRO', schema: JSON.stringify(USER_V2) })
  out.idV2 = await client.register(subject, { schemaType: 'AVRO', schema: JSON.stringify(USER_V2) })
  const latest = await fresh().getLatestSchemaMetadata(subject)
  out.latest = { id: latest.id, version: latest.version, subject: latest.subject }
  const v1 = await fresh().getSchemaMetadata(subject, 1)
  out.v1 = { id: v1.id, version: v1.version }
  out.versions = await fresh().getAllVersions(subject)
  // the latest version (v2) writes; a fresh deserializer reads by the id in each record
  const ser = new AvroSerializer(client, SerdeType.VALUE, { useLatestVersion: true })
  const users = [{ name: 'ann', age: 30, email: null }, { name: 'bob', age: 41, email: 'bob@example.com' }]
  const encoded = []
  for (const u of users) encoded.push(await ser.serialize('cf-users', u))
  out.wireId = encoded[0].readInt32BE(1)
  const de = new AvroDeserializer(fresh(), SerdeType.VALUE, {})
  out.decoded = []
  for (const v of await roundTrip('cf-users', encoded)) out.decoded.push(await de.deserialize('cf-users', v))
  // auto-registration: the serializer derives the schema from the value
  const auto = new AvroSerializer(client, SerdeType.VALUE, { autoRegisterSchemas: true })
  const autoBytes = await auto.serialize('cf-auto', { sku: 'x1', qty: 3 })
  out.autoId = autoBytes.readInt32BE(1)
  out.autoDecoded = await new AvroDeserializer(fresh(), SerdeType.VALUE, {}).deserialize('cf-auto', (await roundTrip('cf-auto', [autoBytes]))[0])
  out.autoSubjects = (await fresh().getAllSubjects()).filter(s => s.startsWith('cf-auto'))
  return out
}

async function json (client) {
  const subject = 'cf-orders-value'
  const info = { schemaType: 'JSON', schema: JSON.stringify(ORDER_JSON) }
  const id = await client.register(subject, info)
  const out = { id }
  out.lookupId = await fresh().getId(subject, info)
  const latest = await fresh().getLatestSchemaMetadata(subject)
  out.latest = { id: latest.id, version: latest.version, type: latest.schemaType }
  const ser = new JsonSerializer(client, SerdeType.VALUE, { useLatestVersion: true, validate: true })
  const orders = [{ id: 1, item: 'a' }, { id: 2, item: 'b' }]
  const encoded = []
  for (const o of orders) encoded.push(await ser.serialize('cf-orders', o))
  out.wireId = encoded[0].readInt32BE(1)
  try {
    await ser.serialize('cf-orders', { id: 'three' })
    out.invalid = 'serialized'
  } catch (e) {
    out.invalid = e.constructor.name
  }
  const de = new JsonDeserializer(fresh(), SerdeType.VALUE, {})
  out.decoded = []
  for (const v of await roundTrip('cf-orders', encoded)) out.decoded.push(await de.deserialize('cf-orders', v))
  return out
}

async function protobuf (client) {
  const files = createFileRegistry(fromBinary(FileDescriptorSetSchema, fs.readFileSync(descriptorSet)))
  const Order = files.getMessage('shop.Order')
  const ser = new ProtobufSerializer(client, SerdeType.VALUE, { autoRegisterSchemas: true, registry: files })
  const orders = [
    create(Order, { id: 7n, total: { currency: 'EUR', units: 12n }, tags: ['x', 'y'], status: 1, quantities: { apple: 2 }, delivery: { case: 'pickup', value: true } }),
    create(Order, { id: 8n, total: { currency: 'NOK', units: 99n }, status: 0, delivery: { case: 'address', value: 'street 1' }, placed: { seconds: 1700000000n } })
  ]
  const encoded = []
  for (const o of orders) encoded.push(await ser.serialize('cf-shop', o))
  const out = { wireId: encoded[0].readInt32BE(1), indexes: encoded[0][5] }
  const latest = await fresh().getLatestSchemaMetadata('cf-shop-value')
  out.latest = { id: latest.id, version: latest.version, type: latest.schemaType, references: latest.references,
    text: latest.schema.startsWith('syntax = "proto3";\npackage shop;\n') }
  const money = await fresh().getLatestSchemaMetadata('shared/money.proto')
  out.money = { id: money.id, version: money.version }
  const de = new ProtobufDeserializer(fresh(), SerdeType.VALUE, {})
  out.decoded = []
  for (const v of await roundTrip('cf-shop', encoded)) {
    const msg = await de.deserialize('cf-shop', v)
    out.decoded.push(plain({ typeName: msg.$typeName, ...toJson(Order, msg) }))
  }
  // a second message type of the same file: message index [1]
  const Refund = files.getMessage('shop.Refund')
  const refund = await ser.serialize('cf-refund', create(Refund, { orderId: 7n }))
  out.refundIndexes = [...refund.subarray(5, 7)]
  const back = await new ProtobufDeserializer(fresh(), SerdeType.VALUE, {}).deserialize('cf-refund', refund)
  out.refund = plain({ typeName: back.$typeName, ...toJson(Refund, back) })
  return out
}

async function incompatible (client) {
  const out = {}
  out.avroCheck = await client.testSubjectCompatibility('cf-users-value', { schemaType: 'AVRO', schema: JSON.stringify(USER_BAD) })
  out.avro = await refused(client, 'cf-users-value', { schemaType: 'AVRO', schema: JSON.stringify(USER_BAD) })
  out.jsonCheck = await client.testSubjectCompatibility('cf-orders-value', { schemaType: 'JSON', schema: JSON.stringify(ORDER_JSON_BAD) })
  out.json = await refused(client, 'cf-orders-value', { schemaType: 'JSON', schema: JSON.stringify(ORDER_JSON_BAD) })
  const money = await client.getLatestSchemaMetadata('shared/money.proto')
  const badProto = { schemaType: 'PROTOBUF', schema: ORDER_PROTO_BAD,
    references: [{ name: 'shared/money.proto', subject: 'shared/money.proto', version: money.version }] }
  out.protobufCheck = await client.testSubjectCompatibility('cf-shop-value', badProto)
  out.protobuf = await refused(client, 'cf-shop-value', badProto)
  out.versionsAfter = await fresh().getAllVersions('cf-users-value')
  // with the subject's compatibility NONE, the same schema registers
  out.compatibilitySet = await client.updateCompatibility('cf-users-value', 'NONE')
  out.compatibility = await fresh().getCompatibility('cf-users-value')
  out.afterNone = await client.register('cf-users-value', { schemaType: 'AVRO', schema: JSON.stringify(USER_BAD) })
  out.deleted = await client.deleteSubjectVersion('cf-users-value', 3, false)
  out.versionsFinal = await fresh().getAllVersions('cf-users-value')
  return out
}

async function main () {
  const client = new SchemaRegistryClient({ baseURLs: [url] })
  const result = {}
  result.avro = await avro(client)
  result.json = await json(client)
  result.protobuf = await protobuf(client)
  result.incompatible = await incompatible(client)
  process.stdout.write(JSON.stringify(result) + '\n')
}

main().catch(e => { process.stderr.write(`${e.stack || e}\n`); process.exit(1) })
